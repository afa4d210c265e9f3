"""Finding reviewers: the inbox of waiting cards, reminder mails and review metrics."""
