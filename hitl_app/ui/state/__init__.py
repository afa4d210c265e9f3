"""Reflex state, one module per concern; import each state from its own module (nothing is re-exported).

The chat page's tab: ``session`` (the signed-in account, parent of the person's states),
``thread_list`` (the sidebar), ``chat`` (the open thread; ``chat_actions`` holds Send, Stop and Retry,
``chat_follow`` is its run watcher),
``review`` (the approval cards of the pending review, with its mixins ``card_choices``,
``card_editing``, ``desk_actions`` (the grant select and Undo), ``review_recovery`` and
``review_summary``), ``desk`` (what the review desk shows: deadline, grant options, the undo
window), ``inbox`` (the cards waiting for the person), ``workspace`` (outbox, files, records),
``menu`` and ``composer``. The other pages: ``auth`` (sign-in and invites), ``admin``, ``audit``
and ``desk_pages`` (grants and metrics). ``live`` holds the append-only text calls, the
one-watcher-per-tab registry and the tab-connected check the app installs; ``disk`` paces the
embedded state manager's folder scan.

The import order is one way: session <- thread_list, workspace <- desk <- chat <- review <- its
mixins' users; a lower state reaches a higher one only through what the higher one attaches
(``chat.attach_review_panel``, ``inbox.add_announcement_handler``), and sibling states act on
each other through module-level doors beside each class (``chat.show_view``,
``desk.grants_to_send``, ...), never through public methods (every public method is a browser
event) nor private ones. Handlers call the services; no graph or SQL logic here. Every handler
argument comes from the browser and is checked before use.
"""
