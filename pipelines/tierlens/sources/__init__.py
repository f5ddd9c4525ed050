"""Sources: everything that turns outside data into canonical record batches (records.Batch)."""
