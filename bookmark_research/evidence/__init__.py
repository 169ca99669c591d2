"""What was read: the content-addressed evidence archive and its full-text index."""
