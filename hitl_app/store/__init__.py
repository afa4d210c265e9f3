"""The app's own tables and the small keyword-only functions that read and write them."""
