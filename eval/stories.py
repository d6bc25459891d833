"""The hand-written half of the evaluation set: a payments company's team chat, story by story.

Each story is a few messages (incidents with their error strings, decisions and their
reversals, customers, scheduling, CJK lines, DMs with agents) and the queries an agent would
type mid-turn to find them, each graded: 2 = the answer, 1 = useful context. Message keys are
`story.suffix`; a scope `thread:SUFFIX` is the thread rooted at that message of the story.
`eval/generate.py` turns this into a fixture and adds seeded noise.

Query kinds (what each one tests):
  identifier   an error code or a snake/kebab/dotted identifier, and the cause or fix that
               was discussed around it in other words
  rare         one rare, specific word among common ones
  decision     the current state of a decision that changed (the later message is the answer)
  paraphrase   the words of the query are not the words of the answer
  people       a customer, a person, a vendor
  schedule     dates, rotations, deadlines
  cjk          Chinese or Japanese text
  ineligible   the best textual match is in a conversation the turn may not show
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class M:
    key: str
    scope: str
    author: str
    minute: int
    body: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Q:
    text: str
    kind: str
    turn: str
    grades: dict[str, int]


@dataclass(frozen=True)
class Story:
    key: str
    days_ago: float
    messages: list[M]
    queries: list[Q] = field(default_factory=list)


# People, agents and conversations of the workspace.
MEMBERS = {
    "maya": "Maya Okafor",  # engineering lead
    "theo": "Theo Brandt",  # backend (billing)
    "priya": "Priya Raman",  # SRE
    "sam": "Sam Whitfield",  # support lead
    "rosa": "Rosa Lindqvist",  # support
    "lena": "Lena Marchetti",  # product
    "omar": "Omar Haddad",  # account management
    "ana": "Ana Costa",  # finance
    "kenji": "Kenji Sato",  # Tokyo engineering
    "wei": "Wei Zhang",  # Shanghai engineering
    "jordan": "Jordan Ellis",  # design
    "dev": "Dev Patel",  # junior backend
}
AGENTS = {"scout": ("Scout", "maya"), "atlas": ("Atlas", "sam")}

EVERYONE = [*MEMBERS]
SCOPES: dict[str, dict[str, object]] = {
    "general": {"visibility": "public", "members": [*EVERYONE, "scout", "atlas"]},
    "eng": {
        "visibility": "public",
        "members": ["maya", "theo", "priya", "kenji", "wei", "dev", "jordan", "lena", "scout"],
    },
    "incidents": {
        "visibility": "public",
        "members": ["maya", "theo", "priya", "sam", "dev", "rosa", "kenji", "scout", "atlas"],
    },
    "support": {
        "visibility": "public",
        "members": ["sam", "rosa", "omar", "lena", "theo", "atlas", "scout"],
    },
    "releases": {
        "visibility": "public",
        "members": ["maya", "theo", "lena", "priya", "jordan", "scout", "atlas"],
    },
    "random": {"visibility": "public", "members": [*EVERYONE, "scout"]},
    "leadership": {"visibility": "private", "members": ["maya", "lena", "ana", "scout"]},
    "billing-ops": {"visibility": "private", "members": ["ana", "theo", "sam", "atlas"]},
    "tokyo": {"visibility": "private", "members": ["kenji", "wei", "maya", "scout"]},
    "acme-shared": {"visibility": "shared", "members": ["omar", "sam", "atlas"]},
}
DMS = {
    "dm-maya-scout": ["maya", "scout"],
    "dm-theo-scout": ["theo", "scout"],
    "dm-lena-scout": ["lena", "scout"],
    "dm-kenji-scout": ["kenji", "scout"],
    "dm-priya-scout": ["priya", "scout"],
    "dm-sam-atlas": ["sam", "atlas"],
    "dm-omar-atlas": ["omar", "atlas"],
    "dm-rosa-atlas": ["rosa", "atlas"],
}

# The turns queries are asked in: (agent, scope, requester).
TURNS = {
    "maya": ("scout", "dm-maya-scout", "maya"),
    "theo": ("scout", "dm-theo-scout", "theo"),
    "lena": ("scout", "dm-lena-scout", "lena"),
    "kenji": ("scout", "dm-kenji-scout", "kenji"),
    "priya": ("scout", "dm-priya-scout", "priya"),
    "eng": ("scout", "eng", "theo"),
    "inc": ("scout", "incidents", "priya"),
    "sam": ("atlas", "dm-sam-atlas", "sam"),
    "omar": ("atlas", "dm-omar-atlas", "omar"),
    "rosa": ("atlas", "dm-rosa-atlas", "rosa"),
    "support": ("atlas", "support", "rosa"),
}

STORIES: list[Story] = [
    Story(
        "declined",
        41,
        [
            M(
                "root",
                "incidents",
                "priya",
                0,
                "Spike of ERR_PAYMENT_DECLINED from checkout-service since 14:05, about 3% of EU card payments. Paging billing.",
            ),
            M(
                "t1",
                "thread:root",
                "theo",
                9,
                "All of the failing ones are EU cards going through the processor. Nothing changed in checkout-service today, looking at the processor side.",
            ),
            M(
                "t2",
                "thread:root",
                "priya",
                21,
                "Found it: the processor API key was rotated this morning and the EU merchant account still had the old key, so the bank saw unauthenticated requests and declined them.",
            ),
            M(
                "t3",
                "thread:root",
                "theo",
                34,
                "Rolled the EU merchant account onto the new key. Declines are back to baseline (0.2%). I'll add an alert on decline rate over 2%.",
            ),
            M(
                "pm",
                "eng",
                "maya",
                1500,
                "Postmortem for Tuesday's payment declines: the key rotation runbook skipped the EU merchant account. Action items: rotation script covers every merchant account, alert on decline rate > 2%, owner Theo.",
            ),
            M(
                "n1",
                "support",
                "rosa",
                60,
                "Two customers asking why their card was declined this afternoon, is that the incident?",
            ),
        ],
        [
            Q(
                "ERR_PAYMENT_DECLINED",
                "identifier",
                "inc",
                {"t2": 2, "t3": 2, "pm": 2, "root": 1, "t1": 1, "n1": 1},
            ),
            Q(
                "why were EU card payments declined",
                "paraphrase",
                "maya",
                {"t2": 2, "pm": 2, "root": 1, "t3": 1, "t1": 1},
            ),
            Q("key rotation runbook merchant account", "rare", "eng", {"pm": 2, "t2": 2, "t3": 1}),
        ],
    ),
    Story(
        "retry",
        75,
        [
            M(
                "p1",
                "eng",
                "theo",
                0,
                "Proposal: change billing.retry_interval from 24h to 6h so failed renewals recover the same day. Dunning emails stay as they are.",
            ),
            M(
                "p2",
                "eng",
                "lena",
                30,
                "Fine with 6h from the product side, recovering revenue faster matters more than the email cadence.",
            ),
            M("p3", "eng", "theo", 60, "Decided: billing.retry_interval = 6h, shipping Thursday."),
            M(
                "f1",
                "billing-ops",
                "ana",
                40000,
                "The 6 hour retries are costing us: the bank charges a fee per declined attempt and October fees quadrupled. Can we go back to daily?",
            ),
            M(
                "f2",
                "billing-ops",
                "theo",
                40030,
                "Yes. I'll revert the interval to 24h and cap attempts at 4.",
            ),
            M(
                "r1",
                "eng",
                "theo",
                40100,
                "Reverting billing.retry_interval to 24h (and max 4 attempts) after finance flagged per-attempt bank fees. Effective Monday, supersedes the 6h decision.",
            ),
            M(
                "x1",
                "random",
                "dev",
                20000,
                "anyone know a good retry library for python? tenacity vs backoff",
            ),
        ],
        [
            Q("billing.retry_interval", "identifier", "eng", {"r1": 2, "p3": 1, "p1": 1}),
            Q(
                "how often do we retry failed charges now",
                "decision",
                "theo",
                {"r1": 2, "f2": 2, "p3": 1, "p1": 1},
            ),
            Q("retry interval bank fees", "decision", "sam", {"f1": 2, "f2": 2, "r1": 2, "p3": 1}),
            Q(
                "retry_interval 6h decision",
                "decision",
                "maya",
                {"r1": 2, "p3": 1, "p1": 1, "p2": 1},
            ),
        ],
    ),
    Story(
        "timeout",
        33,
        [
            M(
                "a",
                "incidents",
                "priya",
                0,
                "checkout-service p99 at 4.2s and climbing, errors are upstream_timeout_ms exceeded calls to the tax API.",
            ),
            M(
                "b",
                "thread:a",
                "dev",
                15,
                "The tax API itself answers in 800ms, we open a new TLS connection per request and the handshake eats the rest.",
            ),
            M(
                "c",
                "thread:a",
                "priya",
                40,
                "Fix deployed: connection pooling for the tax client, and upstream_timeout_ms raised from 3000 to 5000 as a safety margin. p99 back to 900ms.",
            ),
            M(
                "d",
                "eng",
                "dev",
                1200,
                "PR for the tax client keep-alive pool is merged; we should do the same for the shipping quote client.",
            ),
        ],
        [
            Q("upstream_timeout_ms", "identifier", "inc", {"c": 2, "b": 2, "a": 1, "d": 1}),
            Q("checkout slow tax api fix", "paraphrase", "eng", {"c": 2, "b": 2, "d": 1, "a": 1}),
            Q("keep-alive connection pool tax client", "rare", "theo", {"d": 2, "c": 2, "b": 1}),
        ],
    ),
    Story(
        "acme",
        20,
        [
            M(
                "a1",
                "acme-shared",
                "omar",
                0,
                "Acme's procurement asks for a 15% discount on the renewal, and a price lock for two years.",
            ),
            M(
                "a2",
                "leadership",
                "lena",
                120,
                "On Acme: we can go to 10% on the renewal, no multi-year price lock. Ana approved the margin.",
            ),
            M(
                "a3",
                "leadership",
                "ana",
                140,
                "Confirmed, 10% max for Acme. Anything beyond needs a board conversation.",
            ),
            M(
                "a4",
                "dm-omar-atlas",
                "omar",
                300,
                "atlas, keep in mind the Acme renewal is due on the 30th; their champion is Greta in procurement.",
            ),
            M(
                "a5",
                "dm-omar-atlas",
                "atlas",
                301,
                "Noted: Acme renewal due on the 30th, champion Greta (procurement).",
                ("a4",),
            ),
            M(
                "a6",
                "support",
                "omar",
                1000,
                "Heads up: Acme renewal in negotiation, be extra careful with their tickets this month.",
            ),
            M(
                "a7",
                "dm-maya-scout",
                "maya",
                1500,
                "scout, what did we agree on for the Acme discount?",
            ),
        ],
        [
            Q(
                "acme renewal discount",
                "ineligible",
                "omar",
                {"a2": 2, "a3": 2, "a1": 1, "a4": 1, "a5": 1, "a6": 1},
            ),
            Q("acme discount approved", "people", "maya", {"a2": 2, "a3": 2, "a1": 1}),
            Q("acme renewal due date champion", "people", "omar", {"a4": 2, "a5": 2, "a6": 1}),
        ],
    ),
    Story(
        "dup",
        52,
        [
            M(
                "s1",
                "support",
                "rosa",
                0,
                "Brightline says they were charged twice for their October invoice, same amount two minutes apart.",
            ),
            M(
                "s2",
                "support",
                "sam",
                20,
                "Second report today, Hollis & Co also see two identical charges. Escalating to billing.",
            ),
            M(
                "s3",
                "thread:s1",
                "theo",
                90,
                "Root cause: the idempotency key was not sent on the retry path, so a timeout followed by a retry created a second charge.",
            ),
            M(
                "s4",
                "thread:s1",
                "theo",
                200,
                "Fix is live: charge retries reuse the idempotency_key of the first attempt. Refunded the 14 duplicate charges we found.",
            ),
            M(
                "s5",
                "support",
                "rosa",
                260,
                "Told Brightline and Hollis the duplicate was refunded, should show in 5-10 days.",
            ),
        ],
        [
            Q(
                "customer double charge",
                "paraphrase",
                "support",
                {"s3": 2, "s4": 2, "s1": 1, "s2": 1, "s5": 1},
            ),
            Q("idempotency key missing on retry", "identifier", "theo", {"s3": 2, "s4": 2}),
            Q("Brightline refund", "people", "rosa", {"s5": 2, "s4": 2, "s1": 1}),
        ],
    ),
    Story(
        "oncall",
        8,
        [
            M(
                "o1",
                "eng",
                "maya",
                0,
                "December on-call rotation: week 1 Priya, week 2 Theo, week 3 Dev, week 4 Kenji. Holidays count double for comp days.",
            ),
            M(
                "o2",
                "eng",
                "theo",
                300,
                "Dev and I swapped: Dev takes week 2, I take week 3 (family thing).",
            ),
            M("o3", "eng", "maya", 320, "Updated the pager schedule with the swap."),
            M("o4", "random", "priya", 500, "is anyone going to the on-call training on Friday?"),
        ],
        [
            Q("december on-call rotation", "schedule", "eng", {"o1": 2, "o2": 2, "o3": 1}),
            Q("who is on call week 2", "schedule", "priya", {"o2": 2, "o1": 1, "o3": 1}),
            Q("pager swap theo", "schedule", "theo", {"o2": 2, "o3": 2}),
        ],
    ),
    Story(
        "pg16",
        60,
        [
            M(
                "g1",
                "eng",
                "priya",
                0,
                "Plan: upgrade the primary database to Postgres 16 on November 14, replicas first.",
            ),
            M("g2", "eng", "maya", 40, "Approved, PG16 on the 14th."),
            M(
                "g3",
                "eng",
                "priya",
                25000,
                "Postponing the PG16 upgrade to January: the logical replication bug in 16.0 breaks our CDC pipeline. Waiting for 16.2.",
            ),
            M(
                "g4",
                "releases",
                "priya",
                25010,
                "Change calendar: database upgrade moved from Nov 14 to the week of Jan 12.",
            ),
        ],
        [
            Q("postgres upgrade date", "decision", "eng", {"g3": 2, "g4": 2, "g1": 1, "g2": 1}),
            Q("PG16 logical replication CDC", "rare", "priya", {"g3": 2, "g4": 1}),
            Q("when do we upgrade the database", "paraphrase", "maya", {"g4": 2, "g3": 2, "g1": 1}),
        ],
    ),
    Story(
        "tokyo",
        15,
        [
            M(
                "k1",
                "tokyo",
                "kenji",
                0,
                "東京リージョンのレイテンシが高いです。原因はDNSの設定ミスでした。",
            ),
            M("k2", "tokyo", "wei", 30, "上海的用户也受影响，我们已经切换到备用线路。"),
            M(
                "k3",
                "tokyo",
                "kenji",
                60,
                "DNSのTTLを300秒に戻しました。レイテンシは正常に戻りました。",
            ),
            M(
                "k4",
                "eng",
                "kenji",
                90,
                "Tokyo region latency incident resolved: a DNS misconfiguration, TTL restored to 300s.",
            ),
            M(
                "k5",
                "dm-kenji-scout",
                "kenji",
                200,
                "scout, 来週のレビューでこのDNSの件を説明してください。",
            ),
        ],
        [
            Q("レイテンシ 原因", "cjk", "kenji", {"k1": 2, "k3": 2, "k4": 1}),
            Q("DNS設定", "cjk", "maya", {"k1": 2, "k3": 1, "k4": 1}),
            Q("备用线路", "cjk", "kenji", {"k2": 2}),
            Q("tokyo latency dns", "ineligible", "eng", {"k4": 2, "k1": 2, "k3": 2}),
        ],
    ),
    Story(
        "pricing",
        27,
        [
            M(
                "f1",
                "releases",
                "lena",
                0,
                "new_pricing_page is at 10% of traffic behind the flag.",
            ),
            M(
                "f2",
                "releases",
                "lena",
                3000,
                "Rolled back new_pricing_page to 0%: trial signups dropped 18% in the test group. Design is reworking the plan comparison table.",
            ),
            M(
                "f3",
                "eng",
                "jordan",
                3100,
                "New plan comparison table mocks are in Figma, the annual toggle moves above the fold.",
            ),
            M(
                "f4",
                "releases",
                "lena",
                9000,
                "new_pricing_page v2 back on at 25%, signups are flat against control.",
            ),
        ],
        [
            Q("new_pricing_page", "identifier", "eng", {"f4": 2, "f2": 1, "f1": 1}),
            Q(
                "pricing page rollout status",
                "decision",
                "lena",
                {"f4": 2, "f2": 1, "f1": 1, "f3": 1},
            ),
            Q("why did we roll back the pricing page", "paraphrase", "maya", {"f2": 2, "f3": 1}),
        ],
    ),
    Story(
        "ratelimit",
        12,
        [
            M(
                "r1",
                "incidents",
                "dev",
                0,
                "Shipping quotes failing with ERR_RATE_LIMITED (HTTP 429) from the carrier API since the promo email went out.",
            ),
            M(
                "r2",
                "thread:r1",
                "priya",
                10,
                "We call the carrier once per cart view, not per checkout. Promo traffic tripled cart views.",
            ),
            M(
                "r3",
                "thread:r1",
                "dev",
                45,
                "Cached quotes per postcode and weight for 10 minutes; carrier calls dropped 85%, the 429s are gone.",
            ),
            M(
                "r4",
                "support",
                "rosa",
                30,
                "Customers see 'shipping unavailable' at checkout, related to the carrier issue?",
            ),
        ],
        [
            Q(
                "ERR_RATE_LIMITED carrier",
                "identifier",
                "inc",
                {"r2": 2, "r3": 2, "r1": 1, "r4": 1},
            ),
            Q(
                "shipping unavailable at checkout",
                "paraphrase",
                "support",
                {"r3": 2, "r4": 1, "r1": 1, "r2": 1},
            ),
            Q("cache carrier quotes postcode", "rare", "eng", {"r3": 2}),
        ],
    ),
    Story(
        "hiring",
        30,
        [
            M(
                "h1",
                "leadership",
                "maya",
                0,
                "We're freezing backend hiring until Q2; the two open reqs stay open but paused.",
            ),
            M(
                "h2",
                "leadership",
                "lena",
                20,
                "Agreed on the hiring freeze. Design req is unaffected.",
            ),
            M(
                "h3",
                "general",
                "maya",
                2000,
                "Quick note on hiring: we're pausing new backend interviews for a while, design hiring continues.",
            ),
            M(
                "h4",
                "random",
                "jordan",
                50,
                "referral bonus still a thing? friend is a great designer",
            ),
        ],
        [
            Q("hiring freeze", "ineligible", "eng", {"h1": 2, "h2": 2, "h3": 2, "h4": 1}),
            Q("backend hiring paused until", "decision", "maya", {"h1": 2, "h3": 1, "h2": 1}),
        ],
    ),
    Story(
        "saml",
        22,
        [
            M(
                "s1",
                "incidents",
                "sam",
                0,
                "Globex users cannot log in, the SSO error says SAML_ASSERTION_EXPIRED.",
            ),
            M(
                "s2",
                "thread:s1",
                "priya",
                25,
                "Their IdP clock is 7 minutes ahead of ours, so assertions arrive already expired. Our allowed skew is 2 minutes.",
            ),
            M(
                "s3",
                "thread:s1",
                "priya",
                60,
                "Raised the allowed clock skew to 5 minutes for now and asked Globex IT to fix NTP on their IdP. Logins work again.",
            ),
            M("s4", "support", "sam", 2000, "Globex confirmed NTP is fixed on their side."),
        ],
        [
            Q("SAML_ASSERTION_EXPIRED", "identifier", "inc", {"s2": 2, "s3": 2, "s1": 1, "s4": 1}),
            Q("globex login problem", "people", "sam", {"s3": 2, "s2": 2, "s1": 1, "s4": 1}),
            Q("clock skew sso", "paraphrase", "priya", {"s2": 2, "s3": 2}),
        ],
    ),
    Story(
        "invoicepdf",
        45,
        [
            M(
                "i1",
                "support",
                "rosa",
                0,
                "Invoice PDFs come out blank for accounts that have a VAT number set.",
            ),
            M(
                "i2",
                "thread:i1",
                "theo",
                60,
                "The VAT line uses a font the PDF renderer image doesn't ship, the renderer gives up and emits an empty page.",
            ),
            M(
                "i3",
                "thread:i1",
                "theo",
                120,
                "Added the Noto Sans font package to the renderer image; VAT invoices render again. Regenerated the 212 blank ones.",
            ),
        ],
        [
            Q("invoice pdf blank", "paraphrase", "support", {"i3": 2, "i2": 2, "i1": 1}),
            Q("VAT number invoice renderer font", "rare", "theo", {"i2": 2, "i3": 2, "i1": 1}),
        ],
    ),
    Story(
        "offsite",
        35,
        [
            M(
                "o1",
                "general",
                "lena",
                0,
                "Team offsite: Lisbon, March 12-14. Book flights by end of January.",
            ),
            M(
                "o2",
                "general",
                "lena",
                9000,
                "Change of plan: the offsite moves to Porto (same dates, March 12-14), the Lisbon venue cancelled on us.",
            ),
            M("o3", "random", "jordan", 9100, "porto > lisbon anyway"),
            M(
                "o4",
                "dm-lena-scout",
                "lena",
                9200,
                "scout, remind people the offsite hotel block closes February 1.",
            ),
        ],
        [
            Q("offsite location", "decision", "eng", {"o2": 2, "o1": 1}),
            Q("offsite dates hotel", "schedule", "lena", {"o4": 2, "o2": 2, "o1": 1}),
        ],
    ),
    Story(
        "darkmode",
        50,
        [
            M(
                "d1",
                "eng",
                "jordan",
                0,
                "Dark mode: we are not shipping it this quarter, the chart colors need a full accessibility pass first.",
            ),
            M(
                "d2",
                "support",
                "rosa",
                500,
                "Third request this week for dark mode in the dashboard.",
            ),
            M(
                "d3",
                "eng",
                "lena",
                20000,
                "Dark mode is back on the roadmap for next quarter, after the accessibility audit.",
            ),
        ],
        [
            Q("dark mode", "decision", "support", {"d3": 2, "d1": 1, "d2": 1}),
            Q("dark mode accessibility audit roadmap", "decision", "lena", {"d3": 2, "d1": 2}),
        ],
    ),
    Story(
        "freeze",
        5,
        [
            M(
                "z1",
                "releases",
                "maya",
                0,
                "Deploy freeze from December 20 to January 3. Hotfixes need two approvals.",
            ),
            M("z2", "releases", "theo", 60, "Does the freeze cover the billing config changes?"),
            M(
                "z3",
                "releases",
                "maya",
                80,
                "Yes, config changes count as deploys during the freeze.",
            ),
        ],
        [
            Q("deploy freeze dates", "schedule", "theo", {"z1": 2, "z3": 1, "z2": 1}),
            Q("config change during freeze", "schedule", "eng", {"z3": 2, "z2": 1, "z1": 1}),
        ],
    ),
    Story(
        "kafka",
        18,
        [
            M(
                "k1",
                "incidents",
                "priya",
                0,
                "orders-consumer lag at 2.1M messages and rising, order confirmation emails are delayed.",
            ),
            M(
                "k2",
                "thread:k1",
                "wei",
                20,
                "The group keeps rebalancing: each poll batch takes longer than max.poll.interval.ms so the broker kicks the consumer out.",
            ),
            M(
                "k3",
                "thread:k1",
                "wei",
                50,
                "Raised max.poll.interval.ms to 600000 and halved max.poll.records. Lag is draining, 20 minutes to zero.",
            ),
            M(
                "k4",
                "support",
                "rosa",
                30,
                "Customers are asking where their order confirmation email is.",
            ),
        ],
        [
            Q("orders-consumer lag", "identifier", "inc", {"k2": 2, "k3": 2, "k1": 1, "k4": 1}),
            Q("max.poll.interval.ms", "identifier", "eng", {"k3": 2, "k2": 2}),
            Q(
                "order confirmation emails delayed",
                "paraphrase",
                "support",
                {"k3": 2, "k1": 1, "k4": 1, "k2": 1},
            ),
        ],
    ),
    Story(
        "oom",
        24,
        [
            M(
                "m1",
                "incidents",
                "dev",
                0,
                "report-worker pods OOMKilled every 6 hours, monthly reports time out.",
            ),
            M(
                "m2",
                "thread:m1",
                "theo",
                40,
                "The per-tenant dataframe cache in the report worker never evicts; memory grows with each tenant report until the kill.",
            ),
            M(
                "m3",
                "thread:m1",
                "theo",
                200,
                "Bounded the cache to 50 entries with LRU eviction; memory flat at 1.1GB over 24h.",
            ),
        ],
        [
            Q("report-worker OOMKilled", "identifier", "inc", {"m2": 2, "m3": 2, "m1": 1}),
            Q("monthly reports time out memory", "paraphrase", "theo", {"m2": 2, "m3": 2, "m1": 1}),
        ],
    ),
    Story(
        "sunset",
        70,
        [
            M(
                "v1",
                "eng",
                "lena",
                0,
                "The /v1/charges endpoints sunset on March 31. Emails to API customers go out this week.",
            ),
            M(
                "v2",
                "support",
                "omar",
                20000,
                "Two enterprise customers cannot migrate off /v1/charges by March.",
            ),
            M(
                "v3",
                "eng",
                "lena",
                20100,
                "Extending the v1 sunset to June 30 for enterprise plans only; everyone else keeps March 31.",
            ),
        ],
        [
            Q("v1 charges sunset date", "decision", "eng", {"v3": 2, "v1": 1, "v2": 1}),
            Q(
                "enterprise customers v1 migration deadline",
                "decision",
                "omar",
                {"v3": 2, "v2": 1, "v1": 1},
            ),
        ],
    ),
    Story(
        "soc2",
        10,
        [
            M(
                "c1",
                "dm-maya-scout",
                "maya",
                0,
                "scout, remember: the SOC2 audit window is January 15 to February 15, evidence collection starts January 5.",
            ),
            M(
                "c2",
                "dm-maya-scout",
                "scout",
                1,
                "Noted: SOC2 audit January 15 - February 15, evidence collection from January 5.",
                ("c1",),
            ),
            M("c3", "leadership", "ana", 100, "SOC2 auditor contract signed, fee is $38k."),
        ],
        [
            Q("SOC2 audit window", "schedule", "maya", {"c1": 2, "c2": 2, "c3": 1}),
            Q("soc2 evidence collection", "schedule", "eng", {}),
        ],
    ),
    Story(
        "email",
        38,
        [
            M(
                "e1",
                "incidents",
                "rosa",
                0,
                "Password reset emails arrive 30-40 minutes late, users retry and get locked out.",
            ),
            M(
                "e2",
                "thread:e1",
                "priya",
                30,
                "Mail queue shows EMAIL_PROVIDER_TIMEOUT on every send, the provider's EU endpoint is degraded.",
            ),
            M(
                "e3",
                "thread:e1",
                "priya",
                70,
                "Failed over transactional mail to the US endpoint, reset emails arrive in seconds again.",
            ),
        ],
        [
            Q("EMAIL_PROVIDER_TIMEOUT", "identifier", "inc", {"e2": 2, "e3": 2, "e1": 1}),
            Q("password reset emails late", "paraphrase", "rosa", {"e3": 2, "e2": 2, "e1": 1}),
        ],
    ),
    Story(
        "webhook",
        29,
        [
            M(
                "w1",
                "incidents",
                "theo",
                0,
                "Payment webhooks rejected with ERR_WEBHOOK_SIGNATURE since 09:10.",
            ),
            M(
                "w2",
                "thread:w1",
                "theo",
                15,
                "The signing secret was rotated on the processor dashboard but we only updated it in staging.",
            ),
            M(
                "w3",
                "thread:w1",
                "theo",
                25,
                "Production secret updated, replaying the 3,400 rejected webhook events from the processor's log.",
            ),
        ],
        [
            Q("ERR_WEBHOOK_SIGNATURE", "identifier", "inc", {"w2": 2, "w3": 2, "w1": 1}),
            Q("webhook signing secret rotated", "paraphrase", "theo", {"w2": 2, "w3": 2}),
        ],
    ),
    Story(
        "flaky",
        14,
        [
            M(
                "t1",
                "eng",
                "dev",
                0,
                "test_refund_partial fails about one run in five on CI, only after 23:00 UTC.",
            ),
            M(
                "t2",
                "eng",
                "wei",
                40,
                "It compares the refund date in local time with the charge date in UTC; after 23:00 they fall on different days.",
            ),
            M(
                "t3",
                "eng",
                "dev",
                90,
                "Pinned the test clock with freezegun and made the refund date UTC. Green for 50 runs.",
            ),
        ],
        [
            Q("test_refund_partial flaky", "identifier", "eng", {"t2": 2, "t3": 2, "t1": 1}),
            Q("ci test fails at night timezone", "paraphrase", "theo", {"t2": 2, "t3": 2, "t1": 1}),
        ],
    ),
    Story(
        "observability",
        25,
        [
            M(
                "b1",
                "leadership",
                "ana",
                0,
                "Datadog renewal quote is $84k, up 30%. Proposal: move logs to Grafana Loki, keep APM on Datadog.",
            ),
            M(
                "b2",
                "leadership",
                "maya",
                30,
                "Agreed. Logs to Loki by end of Q1, then renegotiate the Datadog renewal for APM only.",
            ),
            M(
                "b3",
                "eng",
                "priya",
                500,
                "We're trialling Grafana Loki for logs next sprint, volunteers welcome.",
            ),
        ],
        [
            Q("datadog renewal", "ineligible", "eng", {"b1": 2, "b2": 2, "b3": 1}),
            Q("logs to loki decision", "decision", "maya", {"b2": 2, "b1": 1, "b3": 1}),
        ],
    ),
    Story(
        "gdpr",
        9,
        [
            M(
                "g1",
                "support",
                "sam",
                0,
                "Umbrella Corp filed a GDPR data export request for all of their end users, due in 30 days (January 4).",
            ),
            M(
                "g2",
                "thread:g1",
                "theo",
                60,
                "The export job covers profiles and invoices; payment method fingerprints need a manual query.",
            ),
            M("g3", "dm-sam-atlas", "sam", 80, "atlas, track the Umbrella export deadline please."),
        ],
        [
            Q("Umbrella data export deadline", "people", "sam", {"g1": 2, "g3": 1, "g2": 1}),
            Q("gdpr export payment method fingerprints", "rare", "support", {"g2": 2, "g1": 1}),
        ],
    ),
    Story(
        "ios",
        16,
        [
            M(
                "i1",
                "incidents",
                "dev",
                0,
                "iOS app crashes on the payment sheet for iOS 17.1 users: NSInvalidArgumentException in PaymentSheetViewController.",
            ),
            M(
                "i2",
                "thread:i1",
                "jordan",
                30,
                "Happens when the saved card list is empty, the sheet tries to select row 0.",
            ),
            M(
                "i3",
                "thread:i1",
                "dev",
                120,
                "Hotfix 4.12.1 guards the empty saved card list; in App Store review.",
            ),
        ],
        [
            Q(
                "NSInvalidArgumentException payment sheet",
                "identifier",
                "inc",
                {"i2": 2, "i3": 2, "i1": 1},
            ),
            Q("ios app crash no saved cards", "paraphrase", "maya", {"i2": 2, "i3": 2, "i1": 1}),
        ],
    ),
    Story(
        "release-jp",
        6,
        [
            M(
                "j1",
                "tokyo",
                "kenji",
                0,
                "来週の月曜日は祝日なので、リリースは火曜日に延期します。",
            ),
            M("j2", "tokyo", "wei", 10, "好的，周二发布。"),
            M(
                "j3",
                "releases",
                "kenji",
                20,
                "Heads up: the Tokyo release moves from Monday to Tuesday (public holiday in Japan).",
            ),
        ],
        [
            Q("リリース 延期", "cjk", "kenji", {"j1": 2, "j3": 1}),
            Q("tokyo release tuesday holiday", "schedule", "eng", {"j3": 2}),
        ],
    ),
    Story(
        "dbmigration",
        11,
        [
            M("d1", "tokyo", "wei", 0, "数据库迁移在周六晚上进行，预计停机两小时。"),
            M(
                "d2",
                "eng",
                "wei",
                30,
                "Saturday night: Shanghai database migration, about two hours of downtime for the CN region.",
            ),
            M("d3", "tokyo", "kenji", 40, "了解しました。東京リージョンは影響なしですね。"),
        ],
        [
            Q("数据库迁移 停机", "cjk", "kenji", {"d1": 2, "d2": 1}),
            Q("shanghai migration downtime", "schedule", "eng", {"d2": 2}),
        ],
    ),
    Story(
        "stampede",
        19,
        [
            M(
                "p1",
                "incidents",
                "priya",
                0,
                "Every hour on the hour the pricing API falls over: pricing-cache entries all expire together and 400 requests recompute the same price table.",
            ),
            M(
                "p2",
                "thread:p1",
                "dev",
                40,
                "Added request coalescing (single flight) and 10% TTL jitter on pricing-cache. The hourly spike is gone.",
            ),
        ],
        [
            Q("pricing-cache expire", "identifier", "inc", {"p2": 2, "p1": 2}),
            Q("pricing api falls over every hour", "paraphrase", "theo", {"p1": 2, "p2": 2}),
        ],
    ),
    Story(
        "twilio",
        40,
        [
            M(
                "t1",
                "billing-ops",
                "ana",
                0,
                "Twilio SMS costs up 40% this quarter, mostly two-factor codes to India and Brazil.",
            ),
            M(
                "t2",
                "billing-ops",
                "sam",
                20,
                "Support can push customers to authenticator apps, that cuts most of the 2FA SMS.",
            ),
            M(
                "t3",
                "support",
                "sam",
                40,
                "Reminder: recommend authenticator apps over SMS codes when customers set up 2FA.",
            ),
        ],
        [
            Q("sms costs two-factor", "people", "sam", {"t1": 2, "t2": 2, "t3": 1}),
            Q("authenticator app instead of sms", "paraphrase", "support", {"t3": 2}),
        ],
    ),
    Story(
        "contoso",
        13,
        [
            M(
                "c1",
                "acme-shared",
                "omar",
                0,
                "Contoso pilot ends November 30; they will only sign if SSO ships before then.",
            ),
            M(
                "c2",
                "dm-omar-atlas",
                "omar",
                30,
                "atlas, Contoso decision maker is Priyanka Rao, CFO.",
            ),
            M(
                "c3",
                "support",
                "omar",
                60,
                "Contoso pilot: please prioritise their tickets, renewal hinges on SSO.",
            ),
            M("c4", "eng", "lena", 90, "SSO for the Contoso pilot is committed for November 20."),
        ],
        [
            Q("contoso pilot sso", "people", "omar", {"c1": 2, "c3": 1, "c2": 1}),
            Q("contoso sso commitment date", "people", "eng", {"c4": 2, "c3": 1}),
        ],
    ),
    Story(
        "redact",
        26,
        [
            M(
                "r1",
                "incidents",
                "priya",
                0,
                "Security: request-logger middleware writes the Authorization header in plaintext to the app logs.",
            ),
            M(
                "r2",
                "thread:r1",
                "theo",
                30,
                "Redaction added for Authorization and Cookie headers, and the affected log indexes are purged.",
            ),
            M(
                "r3",
                "thread:r1",
                "maya",
                60,
                "We rotate every API token issued before today as a precaution; customers get an email.",
            ),
        ],
        [
            Q(
                "request-logger authorization header",
                "identifier",
                "inc",
                {"r2": 2, "r1": 1, "r3": 1},
            ),
            Q("tokens leaked in logs rotation", "paraphrase", "theo", {"r3": 2, "r2": 2, "r1": 1}),
        ],
    ),
    Story(
        "revenue",
        21,
        [
            M(
                "v1",
                "eng",
                "ana",
                0,
                "The revenue dashboard is off by a day for APAC: revenue_daily buckets by UTC but finance reports in local time.",
            ),
            M(
                "v2",
                "eng",
                "wei",
                60,
                "Added a tz column to revenue_daily and the dashboard buckets by the account's reporting timezone.",
            ),
        ],
        [
            Q("revenue_daily timezone", "identifier", "eng", {"v2": 2, "v1": 2}),
            Q("dashboard numbers off by a day", "paraphrase", "maya", {"v1": 2, "v2": 2}),
        ],
    ),
    Story(
        "standup",
        3,
        [
            M(
                "s1",
                "eng",
                "maya",
                0,
                "Starting next week, async standup in #eng by 10:00 local, no more daily call.",
            ),
            M("s2", "eng", "kenji", 30, "Async standup works much better for Tokyo, thanks."),
        ],
        [
            Q("standup format", "decision", "theo", {"s1": 2, "s2": 1}),
        ],
    ),
    Story(
        "laptop",
        48,
        [
            M(
                "l1",
                "general",
                "ana",
                0,
                "Laptop refresh policy: every 3 years, order through the IT portal, old machines go to the recycler.",
            ),
            M(
                "l2",
                "random",
                "dev",
                60,
                "my laptop fan sounds like a jet engine when the test suite runs",
            ),
        ],
        [
            Q("laptop refresh policy", "rare", "eng", {"l1": 2}),
        ],
    ),
    Story(
        "refundpolicy",
        55,
        [
            M(
                "f1",
                "support",
                "sam",
                0,
                "Refund policy: we refund the last charge in full if the customer asks within 14 days; older charges get prorated credit.",
            ),
            M(
                "f2",
                "support",
                "lena",
                20000,
                "Updating the refund window from 14 to 30 days for annual plans, monthly stays at 14.",
            ),
            M(
                "f3",
                "dm-rosa-atlas",
                "rosa",
                20100,
                "atlas, customer on annual plan asking for refund after 20 days, are we ok?",
            ),
        ],
        [
            Q("refund window annual plan", "decision", "rosa", {"f2": 2, "f1": 1, "f3": 1}),
            Q("refund policy days", "decision", "support", {"f2": 2, "f1": 2}),
        ],
    ),
    Story(
        "cert",
        36,
        [
            M(
                "c1",
                "incidents",
                "priya",
                0,
                "api.northwind.io TLS certificate expires in 3 days, cert-manager renewal is stuck on the DNS-01 challenge.",
            ),
            M(
                "c2",
                "thread:c1",
                "priya",
                40,
                "The DNS API token cert-manager uses was revoked in the vendor cleanup. New token stored, certificate renewed, valid until March.",
            ),
        ],
        [
            Q("cert-manager renewal stuck", "identifier", "inc", {"c2": 2, "c1": 1}),
            Q("certificate expiring dns challenge", "paraphrase", "priya", {"c2": 2, "c1": 2}),
        ],
    ),
    Story(
        "quota",
        17,
        [
            M(
                "q1",
                "dm-theo-scout",
                "theo",
                0,
                "scout, the staging database disk is at 91%, remind me tomorrow to drop the old audit partitions.",
            ),
            M(
                "q2",
                "dm-theo-scout",
                "scout",
                1,
                "Reminder set: drop the old audit partitions on staging tomorrow (disk at 91%).",
                ("q1",),
            ),
            M(
                "q3",
                "eng",
                "theo",
                1500,
                "Dropped staging audit partitions older than 90 days, disk at 54%.",
            ),
        ],
        [
            Q("staging disk audit partitions", "rare", "theo", {"q3": 2, "q1": 1, "q2": 1}),
        ],
    ),
    Story(
        "fraud",
        31,
        [
            M(
                "f1",
                "billing-ops",
                "theo",
                0,
                "Card testing attack overnight: 9,000 $1 authorizations from one BIN range on the signup form.",
            ),
            M(
                "f2",
                "billing-ops",
                "ana",
                30,
                "We ate about $2,300 in authorization fees. Can we block it at the edge?",
            ),
            M(
                "f3",
                "incidents",
                "theo",
                60,
                "Added a captcha and a velocity limit (5 card attempts per IP per hour) on signup after a card testing attack.",
            ),
        ],
        [
            Q("card testing attack", "ineligible", "inc", {"f1": 2, "f3": 2, "f2": 1}),
            Q("authorization fees card testing", "people", "sam", {"f2": 2, "f1": 2, "f3": 1}),
        ],
    ),
    Story(
        "holiday",
        4,
        [
            M(
                "h1",
                "general",
                "lena",
                0,
                "Office closed December 24-26 and January 1. Support runs a skeleton rota, see the sheet.",
            ),
            M(
                "h2",
                "support",
                "sam",
                30,
                "Holiday support rota: Rosa 24th, Sam 26th, Omar 1st. Escalations to the on-call engineer.",
            ),
        ],
        [
            Q("holiday support rota", "schedule", "rosa", {"h2": 2, "h1": 1}),
            Q("office closed december", "schedule", "support", {"h1": 2, "h2": 1}),
        ],
    ),
    Story(
        "mfa-cn",
        23,
        [
            M("c1", "tokyo", "wei", 0, "中国用户收不到短信验证码，运营商在拦截国际短信。"),
            M("c2", "tokyo", "wei", 40, "我们改用国内短信通道，验证码已经恢复正常。"),
            M(
                "c3",
                "support",
                "rosa",
                10,
                "Several CN users say they never get the SMS verification code.",
            ),
        ],
        [
            Q("短信验证码", "cjk", "maya", {"c1": 2, "c2": 2, "c3": 1}),
            Q(
                "china sms verification code not received",
                "ineligible",
                "support",
                {"c1": 2, "c2": 2, "c3": 1},
            ),
        ],
    ),
    Story(
        "okr",
        44,
        [
            M(
                "o1",
                "leadership",
                "lena",
                0,
                "Q1 OKR draft: reduce involuntary churn from 2.1% to 1.5% via smarter retries and card updater.",
            ),
            M(
                "o2",
                "dm-lena-scout",
                "lena",
                60,
                "scout, pull every discussion about involuntary churn for the OKR review.",
            ),
        ],
        [
            Q("involuntary churn okr", "decision", "lena", {"o1": 2, "o2": 1}),
        ],
    ),
]

# Second questions about the same stories, asked from other turns or in other words.
_MORE: dict[str, list[Q]] = {
    "declined": [Q("decline rate alert threshold", "rare", "priya", {"pm": 2, "t3": 2})],
    "timeout": [Q("tax API TLS handshake", "rare", "inc", {"b": 2, "c": 1})],
    "dup": [Q("Hollis duplicate charges", "people", "support", {"s2": 2, "s5": 2, "s4": 1})],
    "oncall": [Q("comp days for holidays on call", "rare", "eng", {"o1": 2})],
    "saml": [Q("globex NTP fixed", "people", "rosa", {"s4": 2, "s3": 1})],
    "kafka": [Q("consumer rebalancing max poll records", "rare", "priya", {"k2": 2, "k3": 2})],
    "sunset": [Q("/v1/charges", "identifier", "eng", {"v3": 2, "v1": 2, "v2": 1})],
    "webhook": [Q("replay rejected webhook events", "rare", "inc", {"w3": 2})],
    "stampede": [Q("single flight ttl jitter", "rare", "priya", {"p2": 2})],
    "cert": [Q("api.northwind.io certificate", "identifier", "inc", {"c1": 2, "c2": 2})],
    "freeze": [Q("hotfix approvals", "rare", "maya", {"z1": 2})],
    "contoso": [Q("Priyanka Rao", "people", "omar", {"c2": 2})],
    "ios": [Q("hotfix 4.12.1 app store", "identifier", "eng", {"i3": 2})],
    "tokyo": [Q("東京リージョン", "cjk", "maya", {"k1": 2, "k3": 1})],
    "dbmigration": [Q("停机", "cjk", "kenji", {"d1": 2})],
    "twilio": [Q("twilio sms costs", "ineligible", "support", {"t1": 2, "t2": 2, "t3": 1})],
    "pricing": [Q("plan comparison table annual toggle", "rare", "eng", {"f3": 2, "f2": 1})],
}
for _story in STORIES:
    _story.queries.extend(_MORE.get(_story.key, []))
