"""The approval cards' rows: what the review panel renders of each card (``card_rows``)."""
