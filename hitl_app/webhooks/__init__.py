"""Webhooks: signing a delivery and the loop that delivers the queued events (tables and queue in
``hitl_app.store.webhooks``)."""
