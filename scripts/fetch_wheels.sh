#!/usr/bin/env bash
# Download the wheels the GPU machine lacks into .whl/ (git-ignored), for the device tool to carry.
# The device image already has torch, cupy, pandas, pyarrow, typer, rich, jinja2, pytest,
# nvidia-ml-py and the CUDA libraries; it has no package registry.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
    -d .whl nvmath-python==1.0.0 nvidia-cutlass==4.2.0.0 bm25s==0.3.16
# The train extra (cudal2 train on the device): TRL and what it needs beyond the image.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
    -d .whl trl==1.16.0 peft==0.21.2 accelerate==1.15.0 datasets==5.2.0 transformers==5.23.0 tokenizers==0.23.3 \
    safetensors huggingface-hub dill xxhash multiprocess regex fsspec hf-xet httpx2 httpcore2 truststore h11 anyio \
    idna certifi click filelock tqdm pyyaml psutil
ls -la .whl
