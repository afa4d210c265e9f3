"""A webhook receiver that checks hitl_app's signatures (``receiver.py``)."""
