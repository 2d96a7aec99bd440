# `local`: the embedded default. This machine, no scheduler, Open MPI's mpirun with its default
# MPI-IO component (ompio, which neither takes ROMIO hints nor shows the ones in effect).
#   reframe -C reframe/config/local.py -c reframe/ -R -r -n quickstart
# Scratch root: IOLAB_SCRATCH (default /tmp/iolab-scratch). Profile: the experiments' `local`
# profile, unless IOLAB_PROFILE says otherwise.
from iolab.rfm.systems import local_system

site_configuration = local_system('local', 'openmpi-ompio',
                                  'This machine, no scheduler (iolab embedded default)')
