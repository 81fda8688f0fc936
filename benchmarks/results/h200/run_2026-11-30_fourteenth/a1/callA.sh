#!/usr/bin/env bash
bash .branches/s14/a4.sh; bash .branches/s14/a3.sh
