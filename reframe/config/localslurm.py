# `localslurm`: this machine as a one-node Slurm cluster brought up by `scripts/slurm-local up`.
#   scripts/slurm-local up
#   reframe -C reframe/config/localslurm.py -c reframe/ -R -r -n quickstart
#   scripts/slurm-local down
# Jobs go through sbatch and are polled with sacct (ReFrame's `slurm` backend), so this exercises
# the same path as a real cluster. Two systems, both matching any hostname; the first is the one
# ReFrame picks by default:
#   localslurm:debug          ranks started by `srun` with PMIx (Debian's Open MPI has no PMI2)
#   localslurm-mpirun:debug   ranks started by Open MPI's `mpirun` inside the allocation;
#                             select it with `--system=localslurm-mpirun`
# Scratch root: IOLAB_SCRATCH (default /tmp/iolab-scratch). Cores per node: IOLAB_SLURM_CPUS, the
# CPUs the node advertises (scripts/slurm-local uses the same variable, default 8).
import os

from iolab.rfm.systems import (OPENMPI_ENVIRON, RUN_AS_ROOT, general, logging, slurm_partition,
                                slurm_system, storage, use_slurm_conf)

use_slurm_conf(os.environ.get('IOLAB_SLURM_STATE', '/tmp/iolab-slurm'))

CORES_PER_NODE = int(os.environ.get('IOLAB_SLURM_CPUS', '8'))

# ReFrame's config has no launcher options; the iolab test adds extras['iolab']['launcher_options']
# to its launcher. SLURM_MPI_TYPE is srun's own environment equivalent of --mpi=pmix, so the
# job script gets PMIx even where the options are not applied.
SRUN_MPI = ['--mpi=pmix']

SRUN = 'Slurm partition debug, ranks launched by srun --mpi=pmix'
MPIRUN = 'Slurm partition debug, ranks launched by Open MPI mpirun'
site_configuration = {
    'systems': [
        slurm_system('localslurm',
                     'This machine as a one-node Slurm cluster (scripts/slurm-local), srun + PMIx',
                     slurm_partition('debug', 'srun', SRUN, RUN_AS_ROOT + [['SLURM_MPI_TYPE', 'pmix']],
                                     SRUN_MPI, CORES_PER_NODE, 'openmpi-ompio')),
        slurm_system('localslurm-mpirun',
                     'This machine as a one-node Slurm cluster (scripts/slurm-local), mpirun',
                     slurm_partition('debug', 'mpirun', MPIRUN, RUN_AS_ROOT, [], CORES_PER_NODE,
                                     'openmpi-ompio')),
    ],
    'environments': [OPENMPI_ENVIRON],
    'general': general(),
    'logging': logging(),
    'storage': storage(),
}
