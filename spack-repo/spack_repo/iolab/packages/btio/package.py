# Spack recipe for BTIO, which Spack's builtin repository lacks (its npb recipe does not build
# NPB's BT-IO subtypes). Layout and imports follow Spack >= 1.0 package repositories (API v2).
import glob
import os

from spack_repo.builtin.build_systems.makefile import MakefilePackage

from spack.package import *


class Btio(MakefilePackage):
    """BTIO: the I/O kernel of the NAS BT benchmark, extracted by Wei-keng Liao, writing and
    reading a 5-D array with MPI-IO (collective or independent) or PnetCDF (blocking or
    non-blocking)."""

    homepage = "https://github.com/wkliao/BTIO"
    git = "https://github.com/wkliao/BTIO.git"

    version("2019-07-21", commit="d45c2702ae60218139dc8b44f495453f0a92c431", preferred=True)
    version("master", branch="master")

    depends_on("fortran", type="build")
    depends_on("mpi")
    depends_on("parallel-netcdf +fortran")  # linked even for the MPI-IO methods

    # bt.o depends on pnetcdf_m.f90 instead of pnetcdf_m.o in the Makefile: a parallel make races.
    parallel = False

    def pnetcdf_module_dir(self):
        """Where pnetcdf.mod is: PnetCDF installs it in include/, Debian's libpnetcdf-dev under
        <libdir>/fortran/gfortran-mod-*/ (an external with prefix /usr)."""
        prefix = self.spec["parallel-netcdf"].prefix
        candidates = [prefix.include, *glob.glob(join_path(prefix, "lib*", "*", "fortran", "*")),
                      *glob.glob(join_path(prefix, "lib*", "fortran", "*"))]
        for directory in candidates:
            if os.path.isfile(join_path(directory, "pnetcdf.mod")):
                return directory
        raise InstallError(f"pnetcdf.mod not found under {prefix} (looked in {candidates})")

    @property
    def build_targets(self):
        # The Makefile's own variables: MPIF90, FCFLAGS, and INC/LIBS (which default to
        # $(PNETCDF_DIR)/include and /lib).
        spec = self.spec
        libs = spec["parallel-netcdf"].libs
        return [f"MPIF90={spec['mpi'].mpifc}", "FCFLAGS=-O2",
                f"INC=-I{self.pnetcdf_module_dir()}",
                f"LIBS={libs.ld_flags}"]

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        install("btio", prefix.bin)
        mkdirp(prefix.share.btio)
        install("inputbt.data", prefix.share.btio)
