# `localcluster`: this machine as an N-node Slurm cluster made by `scripts/cluster-local up`: each
# node a network and UTS namespace of its own (host names node1..N) with its own slurmd, joined by
# a link-local bridge. What depends on nodes (one ROMIO aggregator per node, cb_config_list=*:N,
# multi-node job shapes and srun placement) runs for real.
#   scripts/cluster-local up --nodes 4
#   reframe -C reframe/config/localcluster.py -r -n cp2k_aggregators    # its `cluster` profile
#   scripts/cluster-local down
# Two systems, both matching any hostname; the first is the one ReFrame picks by default:
#   localcluster:compute          ranks started by `srun --mpi=pmix`
#   localcluster-mpirun:compute   ranks started by Open MPI's `mpirun` inside the allocation
# Open MPI reaches across the namespaces over TCP on the bridge only: the btl and oob TCP
# components are restricted to its link-local network (IOLAB_CLUSTER_NET, as in the script).
# Cores per node: IOLAB_CLUSTER_CPUS, the CPUs each node advertises (the script's default, 2).
# Experiments run their `cluster` profile (nodes 1, 2, 4), else their `local` one; IOLAB_PROFILE
# overrides both.
import os

from iolab.rfm.systems import (OPENMPI_ENVIRON, RUN_AS_ROOT, general, logging, slurm_partition,
                                slurm_system, storage, use_slurm_conf)

use_slurm_conf(os.environ.get('IOLAB_CLUSTER_STATE', '/tmp/iolab-cluster'))

CORES_PER_NODE = int(os.environ.get('IOLAB_CLUSTER_CPUS', '2'))
NET = f"169.254.{os.environ.get('IOLAB_CLUSTER_NET', '77')}.0/24"
# Ranks on different nodes talk TCP over the bridge; on one node, shared memory.
OPENMPI_NET = [['OMPI_MCA_btl', 'self,vader,tcp'], ['OMPI_MCA_btl_tcp_if_include', NET],
               ['OMPI_MCA_oob_tcp_if_include', NET]]
# srun: PMIx; a rank that dies ends the step at once (--kill-on-bad-exit), instead of the others
# waiting for it in MPI until the time limit (seen once: both ranks of one node died at start).
# SLURM_PMIX_FENCE=ring: every PMIx fence through Slurm's ring algorithm. With Slurm 22.05's
# default (its tree algorithm for a fence without data), the barrier that ends MPI_Init released
# the ranks of a node before the other nodes' ranks had called it, while some were still in the
# modex fence; a message from a released rank then reached one that had no receive callbacks yet,
# and it died of a call through a null pointer in Open MPI's TCP BTL (docs/systems.md).
SRUN_ENV = [['SLURM_MPI_TYPE', 'pmix'], ['SLURM_KILL_BAD_EXIT', '1'], ['SLURM_PMIX_FENCE', 'ring']]
# ROMIO: hints are applied from a file and the ones in effect are printed.
FLAVOUR = 'openmpi-romio'
PROFILES = ['cluster', 'local']

SRUN = 'Slurm partition compute, one node per namespace, ranks launched by srun --mpi=pmix'
MPIRUN = 'Slurm partition compute, one node per namespace, ranks launched by mpirun'
site_configuration = {
    'systems': [
        slurm_system('localcluster',
                     'This machine as an N-node Slurm cluster (scripts/cluster-local), srun + PMIx',
                     slurm_partition('compute', 'srun', SRUN, RUN_AS_ROOT + OPENMPI_NET + SRUN_ENV,
                                     ['--mpi=pmix'],
                                     CORES_PER_NODE, FLAVOUR, PROFILES)),
        slurm_system('localcluster-mpirun',
                     'This machine as an N-node Slurm cluster (scripts/cluster-local), mpirun',
                     slurm_partition('compute', 'mpirun', MPIRUN, RUN_AS_ROOT + OPENMPI_NET, [],
                                     CORES_PER_NODE, FLAVOUR, PROFILES)),
    ],
    'environments': [OPENMPI_ENVIRON],
    'general': general(),
    'logging': logging(),
    'storage': storage(),
}
