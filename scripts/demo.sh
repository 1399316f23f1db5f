#!/usr/bin/env bash
# Set up Beleg, ingest the bundled demo corpus and run searches that show what it does.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="server" bash scripts/setup.sh  # the server extra: `beleg serve` works after the demo
. .venv/bin/activate
export BELEG_INDEX=${BELEG_INDEX:-.beleg-demo}

show() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

show beleg ingest demo/corpus
show beleg status
# Exact identifiers: error codes, API paths, header names.
show beleg search "E-4012" -k 3
show beleg search "POST /v5/queues/{id}/redrive" --mode bm25 -k 3
show beleg search "X-Request-Id" -k 3
# The same question, unfiltered and filtered to the current contract / an old version.
show beleg search "How long are failed webhook deliveries retried?" -k 4
show beleg search "How long are failed webhook deliveries retried?" -k 3 --where "status = current and authority = contract"
show beleg search "How long are failed webhook deliveries retried?" -k 3 --filter version=2.4
# German, and across languages (German question, English documents only).
show beleg search "Wie groß darf eine Nachricht höchstens sein?" -k 3
show beleg search "Was bedeutet es, wenn die Signatur nicht stimmt?" -k 3 --mode dense --filter language=en
# Tenant runbooks are invisible unless the asker belongs to that tenant and its ACL.
show beleg search "mq-nordwind-01.internal" -k 2 --mode bm25
show beleg search "mq-nordwind-01.internal" -k 2 --mode bm25 --tenant nordwind --group ops-nordwind
# Answers (offline, extractive): the governing source's value, cited and verified; conflicts
# reported; a question about a version no document covers is refused; the forum post that
# tries to instruct the model is withheld.
show beleg ask "How long does Ferrolink retry failed webhook deliveries?"
show beleg ask "What was the maximum message size in Ferrolink 2.4?"
show beleg ask "Is the Ferrolink retry window unlimited, so that I do not need a dead-letter queue?"
show beleg ask "Does Ferrolink support MQTT clients?"
# The demo ran inside .venv; a new shell does not have `beleg` on its PATH until it activates it.
# Absolute paths, so the hint works from any folder the user is in.
index_path=$(realpath "$BELEG_INDEX")
printf '\nIndex: %s. To use beleg in your shell, activate the environment first:\n' "$index_path"
printf '  . %s/.venv/bin/activate && beleg search "your question" --index %s\n' "$PWD" "$index_path"
printf '  (or without activating: %s/.venv/bin/beleg search "your question" --index %s)\n' "$PWD" "$index_path"
