"""Fourteenth session diagnostic: what cuCtxResetPersistingL2Cache changes that a later call can see
(the persisting-L2 limit, the stream's access policy window), printed before and after."""
import torch
from cuda.bindings import driver
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
L = driver.CUlimit
def state():
    out = {}
    for name in ("CU_LIMIT_PERSISTING_L2_CACHE_SIZE", "CU_LIMIT_MAX_L2_FETCH_GRANULARITY"):
        err, v = driver.cuCtxGetLimit(getattr(L, name)); out[name] = (int(err), int(v))
    err, cfg = driver.cuCtxGetCacheConfig(); out["cache_config"] = (int(err), str(cfg))
    err, v = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 0)
    out["max_persisting"] = (int(err), int(v))
    return out
print("before", state())
print("reset", driver.cuCtxResetPersistingL2Cache())
print("after ", state())
