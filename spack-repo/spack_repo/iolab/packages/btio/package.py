# Spack recipe for BTIO, which Spack's builtin repository lacks (its npb recipe does not build
# NPB's BT-IO subtypes). Layout and imports follow Spack >= 1.0 package repositories (API v2).
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

    @property
    def build_targets(self):
        spec = self.spec
        pnetcdf = spec["parallel-netcdf"].prefix
        return [f"MPIF90={spec['mpi'].mpifc}", "FCFLAGS=-O2",
                f"INC=-I{pnetcdf.include}", f"LIBS=-L{pnetcdf.lib} -lpnetcdf"]

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        install("btio", prefix.bin)
        mkdirp(prefix.share.btio)
        install("inputbt.data", prefix.share.btio)
