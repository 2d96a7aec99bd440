# `localceph`: like `local` (this machine, no scheduler, Open MPI's mpirun), with scratch on the
# CephFS of `scripts/ceph-local up`, so that `cephfs.*` layouts are applied and witnessed:
#   scripts/ceph-local up
#   reframe -C reframe/config/localceph.py -c reframe/ -R -r -n cephfs_striping
#   scripts/ceph-local down
# Scratch root: $IOLAB_CEPH_MOUNT/iolab-scratch (the mount defaults to $IOLAB_CEPH_STATE/mnt, the
# state to /tmp/iolab-ceph, as in scripts/ceph-local). CEPH_CONF (default: the state's ceph.conf)
# is passed to the jobs, so that they can ask the cluster where a file's objects are. Where the
# mount is absent this file still loads; an experiment with `require_file_system: cephfs` is
# then refused before its run is created, any other records its layouts as not applied.
# Profile: the experiments' `ceph` profile where they have one, else `local`.
import os

from iolab.rfm.systems import local_system

STATE = os.environ.get('IOLAB_CEPH_STATE', '/tmp/iolab-ceph')
MOUNT = os.environ.get('IOLAB_CEPH_MOUNT', os.path.join(STATE, 'mnt'))
CONF = os.environ.get('CEPH_CONF', os.path.join(STATE, 'ceph.conf'))

site_configuration = local_system('localceph', 'openmpi-ompio',
                                  'This machine, no scheduler, scratch on a ceph-local CephFS')
_partition = site_configuration['systems'][0]['partitions'][0]
_partition['descr'] = 'Local processes launched with mpirun, scratch on CephFS (ceph-fuse)'
_partition['env_vars'] = _partition['env_vars'] + [['CEPH_CONF', CONF]]
_partition['extras']['iolab'].update(scratch=os.path.join(MOUNT, 'iolab-scratch'),
                                     profile=['ceph', 'local'])
