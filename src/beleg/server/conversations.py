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
MAX_QUESTIONS = 20


class UnknownConversation(LookupError):
    pass


class Conversations:
    def __init__(self, max_conversations: int = MAX_CONVERSATIONS, max_questions: int = MAX_QUESTIONS) -> None:
        self._items: OrderedDict[str, tuple[str, list[str]]] = OrderedDict()  # id → (owner subject, questions)
        self._lock = threading.Lock()
        self.max_conversations = max_conversations
        self.max_questions = max_questions

    def context(self, conversation_id: str | None, owner: str) -> tuple[str, list[str]]:
        """The id and earlier questions of a conversation (a new id when None)."""
        with self._lock:
            if conversation_id is None:
                conversation_id = secrets.token_urlsafe(16)
                self._items[conversation_id] = (owner, [])
            item = self._items.get(conversation_id)
            if item is None or item[0] != owner:
                raise UnknownConversation(conversation_id)
            self._items.move_to_end(conversation_id)
            while len(self._items) > self.max_conversations:
                self._items.popitem(last=False)
            return conversation_id, list(item[1])

    def add(self, conversation_id: str, question: str) -> None:
        with self._lock:
            item = self._items.get(conversation_id)
            if item is not None:
                item[1].append(question)
                del item[1][:-self.max_questions]
