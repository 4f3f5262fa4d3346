"""The close's books in the store: its tables' migrations and its repository."""
