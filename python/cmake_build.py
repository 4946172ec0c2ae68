"""pip's build of the package (pyproject.toml names these commands): setuptools packs python/systolic,
and the native module _systolic comes from the project's own CMake, which builds the systolic_python
target and what it links, nothing else.

Everything is built under one directory, build-pip/ at the root of the source tree (or
$SYSTOLIC_PIP_BUILD_DIR): setuptools' files there and CMake's build in build-pip/cmake, kept between
installs so that the next one rebuilds only what changed (the first takes a few minutes on two
cores). The project's own build/ is not touched. CMake is given the interpreter that runs pip
(-DPython3_EXECUTABLE), so the module is built for it. Nothing is downloaded:
`pip install --no-build-isolation .` uses the setuptools and wheel already installed (Debian's
python3-setuptools and python3-wheel in a venv made with --system-site-packages).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools.command.build import build as _build
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.egg_info import egg_info as _egg_info
try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # a venv has no wheel of its own: it sees the system's (--system-site-packages)
    raise ImportError("the package's build needs wheel: Debian's python3-wheel, seen from a venv made "
                      "with --system-site-packages") from None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project_version():
    """The project's version, from CMakeLists.txt's project(systolic VERSION ...): one place."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        found = re.search(r"project\(\s*systolic\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not found:
        raise RuntimeError("CMakeLists.txt has no project(systolic VERSION ...)")
    return found.group(1)


VERSION = _project_version()


def build_base():
    return os.path.abspath(os.environ.get("SYSTOLIC_PIP_BUILD_DIR") or os.path.join(ROOT, "build-pip"))


class Build(_build):
    """setuptools' build, under build-pip/ rather than build/, which is the project's CMake build."""

    def initialize_options(self):
        super().initialize_options()
        self.build_base = build_base()


class EggInfo(_egg_info):
    """The egg-info pip's build writes, under build-pip/ rather than in python/."""

    def finalize_options(self):
        if self.egg_base is None:
            self.egg_base = build_base()
            os.makedirs(self.egg_base, exist_ok=True)
        super().finalize_options()


class BuildPy(_build_py):
    """The Python files, then the native module built by CMake beside them."""

    def run(self):
        super().run()
        cmake_dir = os.path.join(build_base(), "cmake")
        configure = ["cmake", "-S", ROOT, "-B", cmake_dir, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython3_EXECUTABLE={sys.executable}",
                     "-DSYSTOLIC_BUILD_TESTS=OFF", "-DSYSTOLIC_BUILD_BENCH=OFF"]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        build = ["cmake", "--build", cmake_dir, "--target", "systolic_python", "--parallel", jobs]
        for command in (configure, build):
            self.announce(" ".join(command), level=2)
            if shutil.which(command[0]) is None:
                raise RuntimeError("cmake is not installed: the native module is built with the "
                                   "project's CMake (Debian's cmake; scripts/setup installs it)")
            subprocess.run(command, check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        module = os.path.join(cmake_dir, "python", "systolic", "_systolic" + suffix)
        if not os.path.exists(module):
            found = glob.glob(os.path.join(cmake_dir, "python", "systolic", "_systolic*"))
            raise RuntimeError(f"CMake built no {module} (found {found}): pybind11-dev and Python's "
                               "headers (python3-dev) are needed")
        target = os.path.join(self.build_lib, "systolic")
        os.makedirs(target, exist_ok=True)
        self.copy_file(module, os.path.join(target, os.path.basename(module)))


class BdistWheel(_bdist_wheel):
    """A wheel for this Python and platform, as it holds a native module (setuptools sees none, since
    CMake builds it)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False
