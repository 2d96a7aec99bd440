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

from iolab.rfm.systems import (OPENMPI_ENVIRON, RUN_AS_ROOT, darshan_from_env, general, logging,
                                stack_from_env, stage_dirs, storage)

CORES_PER_NODE = int(os.environ.get('IOLAB_SLURM_CPUS', '8'))

# ReFrame's config has no launcher options; the iolab test adds extras['iolab']['launcher_options']
# to its launcher. SLURM_MPI_TYPE is srun's own environment equivalent of --mpi=pmix, so the
# job script gets PMIx even where the options are not applied.
SRUN_MPI = ['--mpi=pmix']


def _partition(launcher, descr, env_vars, launcher_options):
    return {
        'name': 'debug',
        'descr': descr,
        'scheduler': 'slurm',
        'launcher': launcher,
        'access': ['--partition=debug'],
        'environs': ['openmpi'],
        # One job at a time: cases of one experiment must not measure each other.
        'max_jobs': 1,
        'features': ['iolab'],
        'env_vars': env_vars,
        'extras': {
            'iolab': {
                'scratch': os.environ.get('IOLAB_SCRATCH', '/tmp/iolab-scratch'),
                'node_local': os.environ.get('IOLAB_NODE_LOCAL', '/tmp'),
                'cores_per_node': CORES_PER_NODE,
                'profile': 'local',
                'mpi_flavour': 'openmpi-ompio',
                'launcher_options': launcher_options,
                'stack': stack_from_env(),
                'darshan': darshan_from_env(),
            },
        },
    }


site_configuration = {
    'systems': [
        {
            'name': 'localslurm',
            'descr': 'This machine as a one-node Slurm cluster (scripts/slurm-local), srun + PMIx',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            **stage_dirs('localslurm'),
            'partitions': [_partition(
                'srun', 'Slurm partition debug, ranks launched by srun --mpi=pmix',
                RUN_AS_ROOT + [['SLURM_MPI_TYPE', 'pmix']], SRUN_MPI)],
        },
        {
            'name': 'localslurm-mpirun',
            'descr': 'This machine as a one-node Slurm cluster (scripts/slurm-local), mpirun',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            **stage_dirs('localslurm-mpirun'),
            'partitions': [_partition(
                'mpirun', 'Slurm partition debug, ranks launched by Open MPI mpirun',
                RUN_AS_ROOT, [])],
        },
    ],
    'environments': [OPENMPI_ENVIRON],
    'general': general(),
    'logging': logging(),
    'storage': storage(),
}
