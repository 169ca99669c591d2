"""Sources: reading package inputs, managed snapshots and the sync lifecycle."""
