# Spack recipe for h5bench 1.6, which Spack's builtin repository lacks (its h5bench stops at 1.4).
# Checked against h5bench 1.6's own CMakeLists.txt (tag 1.6, commit 675c86d1): the options below
# are its H5BENCH_* options, it needs Python at configure time (find_package(Python REQUIRED)),
# and it links the bare library name `hdf5` with ${HDF5_HOME}/include and /lib, so HDF5_HOME
# must be a prefix with include/ and lib/ (Debian's parallel HDF5:
# /usr/lib/x86_64-linux-gnu/hdf5/openmpi). Layout and imports follow Spack >= 1.0 package
# repositories (API v2).
from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *


class H5bench(CMakePackage):
    """h5bench: a suite of parallel HDF5 I/O kernels (write, read, overwrite, append,
    write_unlimited, write_var_normal_dist), with the metadata stress test (hdf5_iotest) and the
    exerciser as options. iolab runs the kernels directly, not the Python driver."""

    homepage = "https://github.com/hpc-io/h5bench"
    git = "https://github.com/hpc-io/h5bench.git"

    license("BSD-3-Clause-LBNL")

    # The submodules (AMReX, openPMD, E3SM-IO, MACSio) are only needed by kernels this recipe
    # does not offer. (Upstream's own numbers lag: at tag 1.6 the CMake project says 1.3.0 and
    # h5bench_version.py says 1.4.0.)
    version("1.6", commit="675c86d11832c625f1d71e63d7626308170ba8c5", preferred=True)

    variant("metadata", default=True, description="Build h5bench_hdf5_iotest (metadata)")
    variant("exerciser", default=True, description="Build h5bench_exerciser")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.10:", type="build")
    depends_on("python@3:", type=("build", "run"))   # configure-time find_package; the driver
    depends_on("mpi")
    # Built and run with HDF5 1.10.8 (Debian 12); the subfiling and async-VOL paths are optional.
    depends_on("hdf5@1.10: +mpi")

    def setup_build_environment(self, env: EnvironmentModifications) -> None:
        # CMakeLists.txt reads HDF5_HOME (or HDF5_DIR) from the environment
        env.set("HDF5_HOME", self.spec["hdf5"].prefix)

    def cmake_args(self):
        return [
            self.define("HDF5_PREFER_PARALLEL", True),
            self.define_from_variant("H5BENCH_METADATA", "metadata"),
            self.define_from_variant("H5BENCH_EXERCISER", "exerciser"),
            self.define("H5BENCH_AMREX", False),
            self.define("H5BENCH_OPENPMD", False),
            self.define("H5BENCH_E3SM", False),
            self.define("H5BENCH_MACSIO", False),
            self.define("H5BENCH_ALL", False),
            self.define("WITH_ASYNC_VOL", False),
            self.define("Python_EXECUTABLE", self.spec["python"].command.path),
        ]
