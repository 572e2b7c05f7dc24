#!/usr/bin/env bash
# The Python packages a GPU image (python3 3.12 with NumPy, CuPy and torch, no network) lacks to
# run a Celery worker of this project, as wheels in var/gpu-wheels (carried to the GPU host;
# bench/gpu_worker_check.sh installs them with --no-deps). Run on a host that reaches PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf var/gpu-wheels && mkdir -p var/gpu-wheels
.venv/bin/pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d var/gpu-wheels Django==5.2.19 celery==5.7.0 dj-database-url==3.1.2 channels==4.3.2 plotly==7.1.0 \
  django-ninja==1.7.1 whitenoise==6.12.0 optuna==5.0.0 cmaes==0.13.1 redis==8.1.0 tzdata Pygments==2.21.0
# what the image already has (a second copy would shadow its own)
cd var/gpu-wheels && rm -f numpy-* click-[0-9]* markupsafe-* narwhals-* packaging-* pygments-* python_dateutil-* \
  pyyaml-* six-* tqdm-* typing_extensions-*
du -sh .
