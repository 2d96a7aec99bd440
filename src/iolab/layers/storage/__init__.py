"""Storage: where a case's fresh directory is, and its striping on the file system at hand."""
