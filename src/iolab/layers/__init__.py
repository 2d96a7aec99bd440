"""The I/O stack between a benchmark and the disks, one layer per concern: storage (striping, one
module per file system), MPI-IO hints (per MPI flavour) and Darshan. Each layer adds its part to
a case's job and reads back what was applied."""
