"""End to end through the ``fairseq-*`` commands and the scripts, run as subprocesses."""
