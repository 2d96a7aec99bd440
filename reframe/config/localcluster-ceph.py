# `localcluster-ceph`: the N-node cluster of `scripts/cluster-local` (reframe/config/localcluster.py:
# Slurm, one network and UTS namespace per node, srun --mpi=pmix, ROMIO), with its scratch on the
# CephFS that `scripts/ceph-local up --cluster` mounts in every node at the same path, so that a
# multi-node MPI-IO job writes one shared file on a real distributed file system:
#   scripts/cluster-local up --nodes 4
#   scripts/ceph-local up --cluster
#   reframe -C reframe/config/localcluster-ceph.py -r -n cephfs_collective
#   scripts/ceph-local down; scripts/cluster-local down       # Ceph first: its address is the bridge's
# Scratch root: $IOLAB_CEPH_MOUNT/iolab-scratch (the mount defaults to $IOLAB_CEPH_STATE/mnt, the
# state to /tmp/iolab-ceph, as in scripts/ceph-local). CEPH_CONF (default: the state's ceph.conf)
# is passed to the jobs: the layout is set and read (setfattr, getfattr) and the file's objects
# are mapped to OSDs (rados ls, ceph osd map) in the job, on its first node, which reaches the
# monitor over the cluster's bridge. Where the mount is absent this file still loads; an
# experiment with `require_file_system: cephfs` is then refused before its run is created.
# Profiles as on localcluster: `cluster`, else `local`; IOLAB_PROFILE overrides.
import os
import runpy

from iolab.rfm.systems import RUN_AS_ROOT, slurm_partition, slurm_system

_cluster = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'localcluster.py'))

STATE = os.environ.get('IOLAB_CEPH_STATE', '/tmp/iolab-ceph')
MOUNT = os.environ.get('IOLAB_CEPH_MOUNT', os.path.join(STATE, 'mnt'))
CONF = os.environ.get('CEPH_CONF', os.path.join(STATE, 'ceph.conf'))

_partition = slurm_partition(
    'compute', 'srun', _cluster['SRUN'] + ', scratch on CephFS (ceph-fuse in every node)',
    RUN_AS_ROOT + _cluster['OPENMPI_NET'] + _cluster['SRUN_ENV'] + [['CEPH_CONF', CONF]],
    ['--mpi=pmix'], _cluster['CORES_PER_NODE'], _cluster['FLAVOUR'], _cluster['PROFILES'])
_partition['extras']['iolab']['scratch'] = os.path.join(MOUNT, 'iolab-scratch')

site_configuration = {
    **_cluster['site_configuration'],
    'systems': [slurm_system('localcluster-ceph',
                             'This machine as an N-node Slurm cluster (scripts/cluster-local), '
                             'scratch on a CephFS mounted in every node (scripts/ceph-local up --cluster)',
                             _partition)],
}
