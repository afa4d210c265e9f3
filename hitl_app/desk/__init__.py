"""The review desk: deciding a review (decisions, claims, grants, deadlines, undo, kept choices, previews)."""
