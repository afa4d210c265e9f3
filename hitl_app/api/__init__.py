"""Deciding from outside the page: the versioned decision API under ``/api/v1`` (personal API
tokens, an OpenAPI document, problem documents for every refusal) and the one-time links of the
reminder mails. Every decision goes through the thread service's one door (``submit_review``)."""
