"""Names iolab gives Darshan's files in a case's stage directory."""

LOG = "darshan.log"
# Darshan 3.4.x's default log hints (romio_no_indep_rw=true;cb_nodes=4) intermittently corrupt
# logs under Open MPI's ompio (darshan issues #1000, #1064; fixed upstream by cb_nodes=1).
LOGHINTS = "cb_nodes=1"
