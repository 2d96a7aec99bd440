"""MPI-IO hints: asked for in the experiment (`mpiio.*`), given to the MPI library the way its
flavour takes them, and read back from what the library printed."""
