"""The Reflex user interface: pages, states and components (the only room that imports reflex)."""
