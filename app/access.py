"""Which kind of token may do what: the one statement of each surface's rule.

A token speaks for a person (member), an agent (agent), an agent's turn on someone's behalf
(turn) or a workspace's connector (connector). Each operation Recall offers — on any transport:
a GraphQL field (app.api.policies declares these on the fields) or an MCP tool — names one
Policy here, and the domain function behind it checks it first, so a transport cannot forget
it: GraphQL and MCP call the same check.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.data.readers import Reader
from app.errors import Forbidden


class TokenKind(StrEnum):
    MEMBER = "member"
    AGENT = "agent"
    TURN = "turn"
    CONNECTOR = "connector"


_PREFIX = {
    TokenKind.MEMBER: "member (rcm_)",
    TokenKind.AGENT: "agent (rca_)",
    TokenKind.TURN: "turn (rct_)",
    TokenKind.CONNECTOR: "connector (rcc_)",
}


@dataclass(frozen=True, slots=True)
class Policy:
    """The token kinds that may perform `operation`."""

    operation: str
    kinds: frozenset[TokenKind]

    def allows(self, kind: str) -> bool:
        return kind in self.kinds

    def check(self, reader: Reader) -> None:
        """FORBIDDEN unless the reader's token kind may perform the operation."""
        if not self.allows(reader.kind):
            raise Forbidden(f"{self.operation} needs {self.wording()}")

    def wording(self) -> str:
        """`a member (rcm_) token`, `a member (rcm_), agent (rca_) or turn (rct_) token`."""
        names = [_PREFIX[k] for k in TokenKind if k in self.kinds]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        article = "an" if listed[0] in "aeiou" else "a"
        return f"{article} {listed} token"


def allows_through_turn(policy: Policy, kind: str) -> bool:
    """Whether a token of `kind` may perform a turn's operation by naming a turn (MCP's `turn`
    argument): an agent token, for a turn it started; it then acts as that turn, with the
    turn's reader (app.mcp.tools), so the turn's own rules still decide everything else."""
    return kind == TokenKind.AGENT and TokenKind.TURN in policy.kinds


def policy(operation: str, *kinds: TokenKind) -> Policy:
    return Policy(operation, frozenset(kinds))


_READERS = (TokenKind.MEMBER, TokenKind.AGENT, TokenKind.TURN)

# Root operations.
VIEWER = policy("viewer", *TokenKind)
READ_OBJECTS = policy("Reading objects", *_READERS)
SEARCH_STATUS = policy("searchStatus", *_READERS)
MESSAGE_SEARCH = policy("messageSearch", TokenKind.MEMBER)
HISTORY_SEARCH = policy("historySearch", TokenKind.TURN)
START_TURN = policy("startTurn", TokenKind.AGENT)
POST_REPLY = policy("postReply", TokenKind.TURN)
APPLY_CHANGES = policy("applyChanges", TokenKind.CONNECTOR)
# Live push (docs/live.md): a person's open search and open conversation.
MESSAGE_SEARCH_UPDATES = policy("messageSearchUpdates", TokenKind.MEMBER)
SCOPE_MESSAGES = policy("scopeMessages", TokenKind.MEMBER)
# MCP's read_conversation (app.mcp): the transcript around a message, for a person. Agents
# read history only through a turn (search_history), whose destination decides what is shown.
READ_CONVERSATION = policy("read_conversation", TokenKind.MEMBER)
# The directory and the scopes a reader may list: what people and agents pick from. A
# connector writes the directory and reads none of it (it only needs its workspace's key).
DIRECTORY = policy("Reading the workspace's directory", *_READERS)
# Linked identities (docs/identity.md): a person proves each identity with its own member
# token, and only a member token may revoke (its own links).
START_IDENTITY_LINK = policy("startIdentityLink", TokenKind.MEMBER)
CONFIRM_IDENTITY_LINK = policy("confirmIdentityLink", TokenKind.MEMBER)
APPROVE_IDENTITY_LINK = policy("approveIdentityLink", TokenKind.MEMBER)
PREVIEW_IDENTITY_LINK = policy("identityLinkCode", TokenKind.MEMBER)
REVOKE_IDENTITY_LINK = policy("revokeIdentityLink", TokenKind.MEMBER)
