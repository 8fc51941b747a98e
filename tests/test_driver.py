"""The loader's driver calls go through ctypes: loading it imports neither the generated driver
bindings nor cupy (tens of milliseconds each, on a library's first call), and the launch structs
have cuda.h's layout."""

import ctypes
import subprocess
import sys

from cudal2.harness import driver


def test_importing_the_loader_pulls_in_no_heavy_bindings():
    code = ("import sys, cudal2.harness.module, cudal2.library; "
            "print(sorted(m for m in sys.modules if m.startswith(('cuda.bindings', 'cupy', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_launch_config_layout_matches_cuda_h():
    # grid(3) block(3) smem: 28 bytes, then the stream pointer at 32, attrs at 40, numAttrs at 48.
    assert driver.LaunchConfig.hStream.offset == 32
    assert driver.LaunchConfig.attrs.offset == 40
    assert ctypes.sizeof(driver.LaunchConfig) == 56


def test_launch_attribute_is_72_bytes_with_its_value_at_8():
    assert driver.LaunchAttr.value.offset == 8
    assert ctypes.sizeof(driver.LaunchAttr) == 72
