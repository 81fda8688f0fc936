"""Hardware layer: device profiles (embedded and measured) and the probe that fills them."""

from smemkit.hw.profile import DeviceProfile, DsmemPrimitives, builtin_profiles, select_profile

__all__ = ["DeviceProfile", "DsmemPrimitives", "builtin_profiles", "select_profile"]
