"""Each living channel's lifecycle — what happens around the tasks once the channel's leaf
package (crowd/marketplaces/<channel>/) has published them: Prolific's study sync, arrival and
filter settings (prolific/), participant links and their page (links/). Reached through
registry.py, which the loop asks to sync every channel; the participant's entry points are
mounted from urls.py. Channel settings shared by every channel are settings.py."""
