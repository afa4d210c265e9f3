"""The pages of the app, one module per route group; each page is a function of its states."""
