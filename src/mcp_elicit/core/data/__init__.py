"""Static tables the core decides with (committed data, no I/O at run time)."""
