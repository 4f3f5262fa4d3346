"""The close's books in the store: its tables' migrations (migrations.py), how the audit chain
covers them (covers.py), and its repository — journal batches (batches.py, batch_writer.py)
and imported files (files.py); bot/close/ledger.py's Ledger is the front of it."""
