"""Conversations of /v1/chat: earlier questions per conversation id, kept in memory per process.

As in ``beleg chat``, only questions are kept (never answers), so follow-ups are resolved
with :func:`beleg.query.conversation.retrieval_query` and no claim of the conversation is
taken as a fact. A conversation belongs to the identity that started it; another caller
asking with its id gets "not found".
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict

MAX_CONVERSATIONS = 10_000
#: One owner's conversations beyond this push out its own oldest, so one key starting
#: conversations in a loop cannot push out everyone else's.
MAX_PER_OWNER = 100
MAX_QUESTIONS = 20


class UnknownConversation(LookupError):
    pass


class Conversations:
    def __init__(self, max_conversations: int = MAX_CONVERSATIONS, max_questions: int = MAX_QUESTIONS,
                 max_per_owner: int = MAX_PER_OWNER) -> None:
        self._items: OrderedDict[str, tuple[str, list[str]]] = OrderedDict()  # id → (owner, questions)
        self._by_owner: dict[str, OrderedDict[str, None]] = {}  # owner → its ids, least recently used first
        self._lock = threading.Lock()
        self.max_conversations = max_conversations
        self.max_questions = max_questions
        self.max_per_owner = max_per_owner

    def context(self, conversation_id: str | None, owner: str) -> tuple[str, list[str]]:
        """The id and earlier questions of a conversation (a new id when None)."""
        with self._lock:
            if conversation_id is None:
                conversation_id = secrets.token_urlsafe(16)
                self._items[conversation_id] = (owner, [])
                self._by_owner.setdefault(owner, OrderedDict())[conversation_id] = None
            item = self._items.get(conversation_id)
            if item is None or item[0] != owner:
                raise UnknownConversation(conversation_id)
            self._items.move_to_end(conversation_id)
            mine = self._by_owner[owner]
            mine.move_to_end(conversation_id)
            while len(mine) > self.max_per_owner:
                self._items.pop(mine.popitem(last=False)[0], None)
            while len(self._items) > self.max_conversations:
                oldest, (oldest_owner, _) = self._items.popitem(last=False)
                self._forget(oldest_owner, oldest)
            return conversation_id, list(item[1])

    def _forget(self, owner: str, conversation_id: str) -> None:
        ids = self._by_owner.get(owner)
        if ids is not None:
            ids.pop(conversation_id, None)
            if not ids:
                del self._by_owner[owner]

    def add(self, conversation_id: str, question: str) -> None:
        with self._lock:
            item = self._items.get(conversation_id)
            if item is not None:
                item[1].append(question)
                del item[1][:-self.max_questions]
