# `local-romio`: like `local`, but Open MPI uses ROMIO (--mca io romio321), so MPI-IO hints are
# applied from a ROMIO_HINTS file and the hints in effect are printed and recorded.
#   reframe -C reframe/config/local-romio.py -c reframe/ -R -r -n cp2k
from iolab.rfm.systems import local_system

site_configuration = local_system('local-romio', 'openmpi-romio',
                                  'This machine, no scheduler, Open MPI with ROMIO')
