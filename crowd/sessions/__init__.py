"""Session channels (Prolific studies, participant links): tasks handed out one at a time
under holds, the links and studies that bring participants, and their pages."""
