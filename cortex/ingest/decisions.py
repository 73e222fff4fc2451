"""Decisions settled in conversation.  Pure functions over consecutive turns, no model calls.

People settle a rule piecewise: the assistant proposes, the user agrees (often adding a condition or
an exception, which belongs to the decision), the assistant sums up what was agreed.  Or the user
states the rule ("never ...", "from now on ...", "keep ours"), or turns down the obvious alternative
with a reason ("no, not a cron job -- it drifts when the box sleeps").  This layer sees the turns in
order, with the state carried across windows (`step` is called per entry and the state is saved in the
cursor), so a proposal in one window and the agreement in the next make one decision, the same one
on every rerun.

Evidence sets the confidence: accepted by the user (0.9; 0.95 when the assistant also sums it up)
> summed up by the assistant alone (0.8) > stated by the assistant alone (the keyword layer, at most
0.75).  A decision names its subject (identifiers of the text, else of the proposal, else of the
exchange that settled it: what the proposing turn and the user named, then what the assistant
mentioned, never a test or scratch file, command or library call it met on the way) so a search for
the function finds it; when unsure it names none.  Brainstorming, hypotheticals, questions, "maybe
later", the user declining and routine narration make nothing.
"""
import functools
import itertools
import re

from cortex.curate.subjects import cap_first, incidental, is_path, mentions_any, subjects, unmark
from cortex.ingest.options import OPTIONS_WORD_RE, offered

ACCEPTED, ACCEPTED_SUMMED, USER_RULE, USER_REJECTED, SUMMED = 0.9, 0.95, 0.9, 0.9, 0.8
CHANGED = 0.85  # a change the user asked for and the assistant confirmed, kept when it replaces a rule
AGREED = "agreed"  # user_turn: the user agreed to a proposal whose words make no rule; the restatement will
EXCHANGE_KEEP = 12  # names of the exchange kept in the state

_ = r"[\s,.!:;—–-]*"
AGREE_RE = re.compile(
    r"^\s*(?:(?:(?:yes|yep|yeah|yup|yes please|sure|ok(?:ay)?|agreed|i agree|agree|sounds (?:good|great|right|fine|"
    r"reasonable|perfect)(?: to me)?|(?:that|this) (?:sounds (?:good|great|right|fine|reasonable)(?: to me)?|works(?: for me)?|"
    r"makes sense|is fine)|works for me|fine by me|makes sense|right|true|fair(?: enough)?|good point|lgtm|looks good(?: to me)?|perfect|great|good|fine|deal|correct|exactly|"
    r"approved|(?:ok(?:ay)?,?\s+)?(?:do|let'?s do) (?:it|that)(?: then)?|do it|do that|go (?:for it|ahead)|go(?=\W*$)|ship it|please do|let'?s do (?:it|that|this)|let'?s go with (?:that|"
    r"this|it)|go with (?:that|this|it)|\+1)\b(?![-'])|👍)" + _ + r")+", re.I)
# "the second one." on its own picks by place, as "go with the second" does ("the first one failed" does not)
_PLACE = r"(?:first|second|third|fourth|last)(?:\s+(?:one|option|approach))?"
CHOOSE_RE = re.compile(r"^\s*(?:\*\*)?(?P<bare>[A-Z1-9])(?:\*\*)?(?:[.,:!)]|\s*$|\s+(?:but|and|with|then|please|pls)\b)|"
                       r"^\s*(?:(?:ok(?:ay)?|yes|yeah|sure|hmm+|right)" + _ + r")?(?:let'?s\s+)?(?:go\s+with|take|pick|"
                       r"choose|i'?d\s+(?:go\s+with|take|pick)|do|prefer)?\s*(?:option|approach|choice|variant|plan|"
                       r"number|#)\s*(?P<label>[A-Z1-9])\b|^\s*(?:(?:ok(?:ay)?|yes|yeah)" + _ + r")?(?:(?:let'?s\s+)?"
                       r"(?:go\s+with|take|pick|choose)\s+(?:the\s+)?|the\s+(?=" + _PLACE + r"\s*(?:[.,;:!]|$|(?:but|"
                       r"and|please|pls|then)\b)))(?P<ord>first|second|third|fourth|last)(?:\s+(?:one|option|approach))?\b",
                       re.I)
ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}
# a reply that only adds the condition ("only if the cache is cold", "except for admin users")
COND_ONLY_RE = re.compile(r"^\s*(?:but\s+)?(?:only\s+(?:if|for|when|on|in)|except(?:\s+for|\s+when|\s+if)?|as\s+long\s+as|"
                          r"provided\s+(?:that\s+)?|unless)\b", re.I)
DECLINE_RE = re.compile(r"^\s*(?:no\b|nope|nah|not\s+(?:now|yet|really|sure|for now)|maybe|perhaps|hmm+|let me think|"
                        r"i'?m not sure|not sure|let'?s not|hold off|wait|don'?t|never\s?mind|later|park|skip)", re.I)
POSTPONE_RE = re.compile(r"\b(?:for now|later|not now|not yet|park (?:it|that|this)|let'?s revisit|think about it|"
                         r"hold off|another time|some ?day|backlog|next sprint|down the road|not today|not urgent)\b", re.I)
CONDITION_RE = re.compile(r"^\s*(?:(?:but|and|though|although|just|however)\s+)*(?:only\b|except\b|unless\b|as long as\b|"
                          r"provided\b|if\b|when\b|with\b|without\b|for\b|not\s+for\b|not\s+on\b|not\s+in\b|excluding\b|"
                          r"make sure\b|keep\b|also\b|never\b|always\b|plus\b|leave\b|skip\b|ignore\b|treat\b|"
                          r"limit\b|cap\b|as well\b|too\b|but\b)", re.I)
QUESTION_START_RE = re.compile(r"^\s*(?:(?:but|and|so|ok|okay)\s+)?(?:what|why|how|who|where|when|which|is|are|"
                               r"do|does|did|can|could|would|will|should|shall|isn'?t|aren'?t|won'?t)\b", re.I)

# a reply that leaves the question open: never an agreement, whatever word it starts with
UNDECIDED_RE = re.compile(r"\b(?:open\s+question|not\s+sure|no\s+need\s+to\s+decide|let\s+me\s+(?:ask|think|check\s+with)|"
                          r"get\s+back\s+to\s+you|no\s+change|leave\s+it|leaving\s+it|park(?:ed)?\s+(?:it|that|this)|"
                          r"don'?t\s+want\s+to\s+decide|(?:not|don'?t)\s+pick\s+(?:one|any)|keep\s+an\s+eye)\b", re.I)
# what the user says before agreeing: conceding a point, or nothing but a filler word
CONCEDE_RE = re.compile(r"^(?:(?:right|fair(?:\s+enough)?|true|ok(?:ay)?|yeah|yes|good\s+point|makes\s+sense|fine|agreed|"
                        r"not\s+that(?:\s+one)?(?:\s+then)?|skip\s+(?:it|that)|point\s+taken|you'?re\s+right|"
                        r"convinced)[\s,.!;:—–-]*)+$", re.I)
# the user picks the assistant's main proposal over the alternative it also mentioned
FIRST_IDEA_RE = re.compile(r"\b(?:your|the)\s+(?:first|original|main)\s+(?:idea|suggestion|option|proposal|plan|one)\s+"
                           r"(?:is|was|sounds)\s+better\b|\b(?:go|stick)\s+with\s+(?:your|the)\s+(?:first|original|main)\b|"
                           r"\bstick\s+with\s+(?:your|the)\s+(?:proposal|suggestion|plan)\b", re.I)
# the user turns down the alternative the assistant offered ("no, ..."); the rest of the sentence is the reason
DECLINE_ALT_RE = re.compile(r"^(?:no|nope|nah|let'?s\s+not|definitely\s+not|absolutely\s+not|please\s+don'?t|not\s+that"
                            r"(?:\s+one)?)\b[\s,.!;:—–-]*(?P<reason>.*)$", re.I)
# a condition introduced by name ("one thing though: ...", "with one tweak: ...", "caveat: ...")
COND_LEAD_RE = re.compile(r"^(?:(?:but|though|although|however|and)\s*[,:]?\s*)?(?:(?:with\s+)?(?:one|a|just\s+one)\s+"
                          r"(?:small\s+)?(?:tweak|thing|condition|caveat|exception|change|catch|detail|proviso)"
                          r"(?:\s+though)?|caveat|condition|exception|tweak|proviso|one\s+more\s+thing)\s*[:,—–-]\s*",
                          re.I)
# an afterthought to what was just agreed, in a later turn ("one more thing: ...", "forgot to say, ...")
AFTER_RE = re.compile(r"^(?:oh|ah|and|btw)?[\s,.!]*(?:(?:and\s+)?one\s+more\s+thing(?:\s+(?:about|on)\s+(?:that|this|it))?|"
                      r"forgot\s+to\s+(?:say|mention|add)|(?:actually[\s,.]+)?wait|actually|thinking\s+about\s+it\s+"
                      r"(?:more|again)|on\s+second\s+thought|one\s+(?:caveat|exception|condition|addition)|"
                      r"p\.?s\.?|i\s+should\s+(?:have\s+)?(?:said|mentioned))\b[\s,.:;!—–-]+(?P<body>.+)$", re.I | re.S)
AFTER_TURNS = 6
# the assistant mentions a different course beside its proposal ("the simpler alternative would be to ...")
ALT_RE = re.compile(r"(?:^|\b)(?:(?:the|a|one)\s+)?(?:(?:simpler|obvious|cheaper|other|naive|quicker)\s+)?alternative"
                    r"\s+(?:would\s+be|is)\s+(?:to\s+)?(?P<a>[^.?;,]{6,})|\bwe\s+could\s+also\s+(?:just\s+)?(?P<b>[^.?;,]{6,})|"
                    r"^or,?\s+(?:much\s+|even\s+)?(?:simpler|cheaper|quicker|instead)[\s,:]+(?:we\s+could\s+)?"
                    r"(?P<c>[^.?;,]{6,})", re.I)
ALT_WORDS = ("alternative", "could")  # every match of ALT_RE but one at a sentence start "or" holds one
# the user asks about a different course ("why not just ...?", "couldn't we simply ...?")
CHALLENGE_RE = re.compile(r"^\s*(?:but\s+|hmm+,?\s+)?(?:why\s+not\s+(?:just\s+|simply\s+)?|what\s+about\s+|couldn'?t\s+we\s+"
                          r"(?:just\s+|simply\s+)?|can'?t\s+we\s+(?:just\s+|simply\s+)?|wouldn'?t\s+it\s+be\s+(?:simpler|"
                          r"easier)\s+to\s+|shouldn'?t\s+we\s+(?:just\s+)?|isn'?t\s+it\s+(?:simpler|easier)\s+to\s+)"
                          r"(?P<alt>[^?\n]{3,140})\?\s*$", re.I)
# the assistant's reason against it ("I considered it; the problem is that ...", "we could, but ...")
COUNTER_RE = re.compile(r"(?:the\s+(?:problem|issue|catch|trouble|downside)\s+(?:is|was)(?:\s+that)?|\bbut|\bexcept\s+that|"
                        r"\bhowever,?)\s+(?P<reason>[^.!?]{10,})", re.I)
REAFFIRM_RE = re.compile(r"\b(?:stick|still\s+go|stay)\s+with\s+(?:my|the|our)\s+(?:suggestion|proposal|first|original|plan|"
                         r"recommendation)|\bhence\s+the\s+proposal\b|\b(?:the|my)\s+proposal\s+above\b", re.I)
# a concrete course named as the proposal ("One clean option: ...", "The least invasive fix I can see is to ...")
FIRM_RE = re.compile(r"^(?:(?:so|ok(?:ay)?|here'?s)[\s,:]+)?(?:(?:one|the|my|our|a)\s+)?(?:(?:clean|cleaner|simple|simplest|"
                     r"cleanest|safest|cheapest|least\s+invasive|most\s+direct|smallest|best|minimal|straightforward|"
                     r"proposed|recommended|concrete|sensible|pragmatic)\s+)*(?:option|fix|approach|plan|proposal|"
                     r"recommendation|suggestion|way\s+forward|solution|change|route)(?:\s+I\s+(?:can\s+)?(?:see|"
                     r"think\s+of)|\s+here)?\s*(?::|—|–|\s-\s|(?:is|would\s+be)\s+to\s+|(?:is|would\s+be)\s*:)\s*", re.I)

# -- what the assistant proposes ------------------------------------------------------------------
# "I'd <verb> ...": "I would" and a course of action ("I'd enqueue both from `schedule_reminders()`"), not a
# feeling or a step of the work ("I'd need to check", "I'd like to look", "I'd be careful") nor "I had"
# ("I'd already fixed it", "I'd seen this", "I'd added a test"); with its apostrophe ("the id on resend" is no "I'd")
I_WOULD = (r"(?:(?:just|probably|also|still|actually|rather|definitely|personally|strongly)\s+)*"
           r"(?!(?:be|need|like|love|hate|want|guess|say|think|imagine|expect|hope|bet|feel|appreciate|assume|"
           r"argue|note|mention|check|look|start|first|not|never|reject|rule\s+out|advise\s+against|already|"
           r"been|seen|gotten|forgotten|taken|given|"
           r"written|chosen|done|made|had|left|found|thought|tried|run|read|known|heard|rather\s+not|have\s+(?:to|"
           r"thought|expected|guessed|said|been|done|seen|liked|preferred))\b)(?![a-z]*[^e\W]ed\b)[a-z]+\b")
PROPOSAL_RE = re.compile(
    r"\b(?:I|we)\s+(?:propose|suggest|recommend)\b|\bI'?d\s+(?:suggest|recommend|propose|go\s+with|lean\s+towards?)\b|"
    r"\bI['’]d\s+" + I_WOULD + r"|\bmy\s+(?:suggestion|recommendation|proposal)\b|"
    r"^(?:\*\*)?(?:(?:counter|revised|updated|new)[\s-]?)?(?:proposal|recommendation|suggestion|alternative|"
    r"proposed\s+(?:rule|fix|change|approach|policy))"
    r"(?:\*\*)?\s*:|"
    r"\bhow\s+about\b|(?:^|,\s*)(?:should|shall)\s+(?:we|I)\b|\b(?:want|would\s+you\s+like)\s+me\s+to\b|"
    r"\bthe\s+(?:rule|policy|convention)\s+(?:would|could|should)\s+be\b|^let'?s\s+(?!me\b|see\b|check\b|look\b|"
    r"find\b|run\b|read\b|start\b|first\b|try\b)|\bwe\s+should\b|\bwhat\s+if\s+we\b", re.I)
# a word every match of PROPOSAL_RE holds, in a sentence whose spaces are single (tidied): mentions_any
PROPOSAL_WORDS = ("propos", "suggest", "recommend", "i'd", "id ", "how about", "should", "shall", "me to", "ould be",
                  "what if", "let", "alternative")
ASK_RE = re.compile(r"(?:\bsounds?\s+(?:good|ok|okay|right|reasonable)|\bdoes\s+(?:that|this)\s+(?:work|sound\s+\w+|"
                    r"make\s+sense)|\b(?:ok|okay|agreed|alright)|\bgood\s+with\s+(?:that|this)|\bfine\s+with\s+(?:that|"
                    r"this)|\bwhat\s+do\s+you\s+think|\bany\s+objections?|\bshall\s+I\s+(?:go\s+ahead|proceed)|"
                    r"\bshould\s+I\s+(?:go\s+ahead|proceed)|\bwant\s+me\s+to\s+(?:go\s+ahead|proceed)|\bwork\s+for\s+you|"
                    r"\byour\s+call|\bwhich\s+(?:one\s+|option\s+)?(?:do\s+you\s+(?:prefer|want)|would\s+you\s+(?:prefer|like|pick)))"
                    r"\s*\??\s*$", re.I)
# an offer to do work whose object is a pronoun ("Want me to do it?", "want me to make that change in the same
# PR?"): it asks about the turn's proposal, when the turn made one; it proposes nothing itself
VAGUE_OFFER_RE = re.compile(r"^(?:(?:so|ok(?:ay)?|and)\W+)?(?:(?:do\s+you\s+)?want|would\s+you\s+like|shall\s+I|should\s+I)"
                            r"\s+(?:me\s+to\s+)?(?:\w+\s+){0,2}?(?:it|that|this|those|these|them)\b"
                            r"(?!\s+(?:to|with|into|as|for|from|via|using|on|instead|over|by)\b)(?:\s+[\w-]+){0,6}"
                            r"\s*[?.]?$", re.I)
NARRATION_RE = re.compile(r"^(?:(?:now|first|next|then|ok(?:ay)?|great|alright),?\s+)?(?:let\s+me|I'?ll|I\s+will|I'?m\s+"
                          r"going\s+to|I\s+am\s+going\s+to|I'?m)\s+(?:now\s+|first\s+)?(?:read|check|look|run|open|"
                          r"search|grep|inspect|start|examine|review|see|find|view|list|explore|investigate|try|"
                          r"verify|take|dig|go\s+through|scan|fetch|pull|compile|test|re-?run|summari[sz]e)\b", re.I)
WEAK_ACTION_RE = re.compile(r"\b(?:want|would\s+you\s+like)\s+me\s+to\s+(?:run|re-?run|read|check|look|open|commit|push|"
                            r"continue|proceed|start|go\s+ahead|implement|write|create|merge|deploy|clean|format|lint|"
                            r"fix\s+(?:it|that|this|the\s+typo)|show|explain|add\s+tests?|update\s+the\s+docs?)\b|"
                            r"^(?:should|shall)\s+I\s+(?:run|re-?run|read|check|look|open|commit|push|continue|proceed|"
                            r"start|go\s+ahead|implement|write|create|merge|deploy|show|explain)\b", re.I)
HYPOTHETICAL_RE = re.compile(r"^(?:if\s+we|if\s+you|suppose|imagine|in\s+theory|hypothetically|one\s+option\s+would|"
                             r"another\s+option|alternatively|or\s+we\s+could)\b|\b(?:we|you)\s+could\s+(?:also\s+)?"
                             r"\w+.*\bor\b", re.I)
NUMBERED_RE = re.compile(r"(?m)^\s*(?:\*\*)?(?P<n>[1-9])[.)](?:\*\*)?\s+(?P<text>.+)$")
OPTION_RE = re.compile(r"(?im)^\s*(?:[-*]\s*)?(?:\*\*)?(?:option|approach|choice|variant|plan)\s+(?P<label>[A-Z1-9])\b"
                       r"(?:\*\*)?\s*(?:[:.)—–-]|\*\*)\s*(?:\*\*)?\s*(?P<text>.+)$|^\s*(?:\*\*)?(?P<label2>[A-C])[.)]"
                       r"(?:\*\*)?\s+(?P<text2>.+)$")
RECOMMEND_RE = re.compile(r"\b(?:I'?d|I|my)\s+(?:recommend|suggest|go\s+with|lean\s+towards?|prefer|pick|vote\s+for|"
                          r"recommendation\s+is|suggestion\s+is|pick\s+is)\s+(?:is\s+)?(?:\*\*)?(?:(?:option|approach|"
                          r"choice|variant|plan)\s+)?(?P<label>[A-Z1-9])\b(?!['’])", re.I)
LEAD_RE = re.compile(r"^(?:(?:so|ok(?:ay)?|then|here'?s\s+(?:my|the)\s+(?:suggestion|proposal|recommendation)|"
                     r"proposal|recommendation|suggestion|alternative|proposed\s+(?:rule|fix|change|approach|policy))\s*[:,—–-]\s*)*"
                     r"(?:I'?d\s+(?:suggest|recommend|propose)|I\s+(?:suggest|recommend|propose)|my\s+(?:suggestion|"
                     r"recommendation|proposal)\s+(?:is|would\s+be)|how\s+about|what\s+if|should|shall|I'?d)\s*"
                     r"(?:that\s+|to\s+)?(?:we\s+)?", re.I)

# -- the assistant sums up what was settled ----------------------------------------------------------
SUMMARY_RE = re.compile(
    r"(?:^|(?<=[.!\n]))\s*(?:\*\*)?(?:(?:so|ok(?:ay)?|great|perfect|got\s+it|understood|noted|alright)\s*[,—–:!.-]*\s*)*"
    r"(?:to\s+(?:summari[sz]e|recap|confirm|sum\s+up)\s+(?:the\s+(?:decision|rule|agreement|policy)|what\s+we\s+"
    r"(?:agreed|decided|settled)(?:\s+on)?)|(?:here'?s\s+|this\s+is\s+)?what\s+we\s+(?:agreed|decided|settled)(?:\s+on)?|"
    r"we(?:'ve|\s+have)?\s+(?:agreed|decided|settled)(?:\s+on)?|(?:the\s+)?(?:agreed|final|new|updated|amended|settled|"
    r"revised)\s+(?:rule|decision|policy|approach|convention)(?:\s+(?:is|for\s+[^:]{1,60}))?|(?:the\s+)?(?:rule|decision|"
    r"policy|convention)(?:\s+(?:is\s+now|now|for\s+[^:]{1,60}))?|summary\s+of\s+(?:the\s+decision|what\s+we\s+agreed))"
    r"(?:\*\*)?\s*(?::|—|–|\s-\s|\bthat\b|\bto\b|\bon\b)\s*(?:\*\*)?\s*(?P<body>.*)", re.I)
# other ways to sum up; all but "settled" only right after an agreement (a "Summary of the change:" alone
# is a change log, not a decision)
RECAP_RE = re.compile(r"^\s*(?:\*\*)?(?:(?:so|ok(?:ay)?|done|great|alright|right)\s*[,.!:—–-]*\s*)*(?:(?P<strong>settled|"
                      r"agreed|decided)|recap(?:\s+for\s+[^:]{1,40})?|(?:quick\s+)?summary(?:\s+of\s+(?:the\s+)?(?:change|"
                      r"changes|fix|plan))?|for\s+the\s+record(?:,?\s+the\s+(?:behaviou?r|rule|logic)\s+is\s+now)?|"
                      r"the\s+(?:behaviou?r|rule|logic)\s+is\s+now|in\s+short|tl;?\s*dr|(?:(?:summary|recap)\s+of\s+)?where\s+"
                      r"we\s+(?:are\s+now|ended\s+up|landed|stand))(?:\*\*)?\s*[:—–]\s*(?:\*\*)?\s*"
                      r"(?P<body>.*)", re.I)
# what an amendment says it replaces: the earlier rule, or (a rule amended again) the amended / current one
_EARLIER = r"(?:earlier|old|previous|original|existing|former|prior|current|amended|last)"
_A_RULE = r"(?:rule|decision|policy|amendment)"
REPLACING_RE = re.compile(r"\s*(?:(?:ok(?:ay)?|noted|understood|got\s+it|right|so|done)\s*[,.!:—–-]*\s*)*(?:replacing|"
                          r"this\s+replaces)\s+the\s+" + _EARLIER + r"\s+" + _A_RULE + r"(?:\s+again)?"
                          r"(?:\s+with\s+the\s+new\s+one)?\s*[:—–-]\s*(?P<body>.+)", re.I)
SUPERSEDES_RE = re.compile(r"\s*(?:that|this)\s+(?:supersedes|replaces|overrides)\s+(?:what\s+we\s+(?:settled|agreed|"
                           r"decided)(?:\s+on)?|the\s+(?:earlier|old|previous|original)\s+(?:rule|decision|policy))", re.I)
# the turn says the rule it states replaces the earlier one ("This replaces the earlier rule (...). New rule:
# X", "so the previous behaviour (...) is superseded. From now on: X")
REPLACES_EARLIER_RE = re.compile(
    r"\b(?:this|that|it|which)\s+(?:replaces|supersedes|overrides)\s+(?:the\s+|our\s+)?" + _EARLIER + r"\b|"
    r"\b(?:the\s+)?" + _EARLIER + r"\s+(?:rule|decision|policy|behaviou?r|approach|amendment)\b.{0,300}?\b(?:is|was)"
    r"\s+(?:now\s+)?(?:superseded|replaced|obsolete|void|gone|dropped|retired)\b", re.I | re.S)
# ... and then states the new rule after a lead that says it holds from now on
FROM_NOW_RE = re.compile(r"\s*(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|henceforth)\s*[:—–]\s*"
                         r"(?P<body>.+)", re.I)
REPLACED_MARK = " (this replaces the earlier rule)."

# -- a change the user asks for, confirmed by the assistant ------------------------------------------------
# "Quick tweak to `reserve_stock()`: 30 minutes." ... (edits, tests) ... "Done: `reserve_stock()` now holds
# units for 30 minutes before releasing them."  A user's turn that names code and asks nothing, then the
# assistant's statement of how that code behaves now: a candidate for the rule in force on it.  Most such
# exchanges change something else about the code (a docstring, a log line, type hints), so the candidate is
# kept only when it replaces an earlier rule on that code that it contradicts (curate/consolidate.py
# `changed_targets`: a value of it replaced by another, worded alike apart from the name); kind "changed".
CONFIRM_LEAD_RE = re.compile(r"^(?:(?:done|ok(?:ay)?|sure|fixed|updated|changed|implemented|got\s+it|noted|alright|"
                             r"right|great|perfect|understood|all\s+set|ready)\s*[,.:!—–-]+\s*)+", re.I)
# ... of which those that report the work done ("Right: `dispatch()` sorts every driver ..." agrees with the user's
# description of the code as it is)
WORK_DONE_RE = re.compile(r"^(?:(?:ok(?:ay)?|sure|great|perfect|alright)\s*[,.:!—–-]+\s*)*(?:done|fixed|updated|changed|"
                          r"implemented|all\s+set|ready)\s*[,.:!—–-]+", re.I)
NOW_STATES_RE = re.compile(r"(?<!right\s)(?<!for\s)(?<!until\s)(?<!till\s)(?<!as\sof\s)\bnow\b|^(?:changed|updated|bumped|set|switched|moved|made|raised|lowered|increased|"
                           r"decreased|reduced|extended|shortened)\b.{0,120}\bto\b", re.I)
# a user turn that leaves a requested change waiting: an acknowledgement, or a question on the side
SIDE_REPLY_RE = re.compile(r"^(?:(?:yes|yep|yeah|ok(?:ay)?|sure|fine|good|great|thanks?|thx|ty|cool|nice|right|perfect|"
                           r"go(?:\s+ahead)?|do\s+(?:it|that)|ship\s+it|sounds\s+good|please\s+do)\b[\s,.!]*)+(?:$|[^\n]{0,200}$)|"
                           r"^[^\n]{0,160}\?\s*$", re.I)
CHANGE_TURNS = 4  # assistant entries (text between tool calls) a change request waits for its confirmation
# the assistant reports the change made without restating it ("Done. The tests pass."): the user's request,
# in the user's words, is then the candidate
CHANGE_DONE_RE = re.compile(r"^\W*(?:done|all\s+set|updated|changed|implemented|switched|bumped|made\s+the\s+change|"
                            r"that'?s\s+(?:done|in)|it'?s\s+(?:done|in))\b", re.I)


# a question that asks for the work ("Can you switch it over?", "could you bump it to 5000?"), not for an
# answer ("can you check the numbers first?", "can you explain ...") nor for a look ("Can you dig in?": a
# change it asks for also says how, CHANGE_VERB_RE)
POLITE_REQUEST_RE = re.compile(r"^(?:(?:so|ok(?:ay)?|and|also|then|oh|btw)[\s,]+)*(?:can|could|would|will)\s+you\s+"
                               r"(?:please\s+|pls\s+|just\s+|also\s+)*(?!tell|explain|check|look|see|confirm|remind|"
                               r"show|find|help|think|describe|walk|clarify|double-check|verify|investigate|figure)\w", re.I)
# a number said as a value, not one inside a name or a version ("SEC-118", "/v1/config", "v2")
VALUE_DIGIT_RE = re.compile(r"(?<![\w./-])\d")
CHANGE_VERB_RE = re.compile(r"\b(?:make|set|change|bump|raise|lower|increase|decrease|reduce|extend|shorten|switch|"
                            r"move|use|using|drop|dropping|replace|revert|go\s+back|cut|cap|limit|double|halve|widen|"
                            r"tighten|loosen)\b|→|->|\bto\s+\d", re.I)
# what a request says it moves away from: "we're dropping OneSignal and using FCM", "move off Koin to plain
# constructors", "switch from Mapbox to OSRM", "replace Sentry with GlitchTip"
_CHOICE = r"`?(?P<%s>[A-Z][\w.+-]*(?:\s+[A-Z][\w.+-]*){0,2}|[a-z][\w.+-]*[A-Z0-9][\w.+-]*)`?"
SWITCH_REQUEST_RE = [
    re.compile(r"\b(?:drop(?:ping)?|ditch(?:ing)?|get(?:ting)?\s+rid\s+of|mov(?:e|ing)\s+(?:off|away\s+from)|"
               r"stop(?:ping)?\s+using|remov(?:e|ing)|replac(?:e|ing)|sunset(?:ting)?|retir(?:e|ing))\s+" + _CHOICE % "old"
               + r"(?:.{0,60}?\b(?:and\s+(?:use|using|go(?:ing)?\s+with|mov(?:e|ing)\s+to|switch(?:ing)?\s+to)|"
               r"with|for|to|in\s+favou?r\s+of)\s+" + _CHOICE % "new" + r")?"),
    re.compile(r"\b(?:switch|move|migrate|go)(?:ing)?\s+(?:\w+\s+){0,4}?from\s+" + _CHOICE % "old" + r"\s+to\s+"
               + _CHOICE % "new"),
    re.compile(r"(?:^|[.!;]\s+)" + _CHOICE % "old" + r"\s+(?:was|has\s+been|turned\s+out\s+to\s+be)\s+(?:a\s+)?"
               r"(?:mistake|bad\s+(?:idea|call|choice)|a\s+dead\s+end)"),
]


def switch_request(text: str):
    """(old, new or None) when a request moves away from a named choice, else (None, None)."""
    for pat in SWITCH_REQUEST_RE:
        m = pat.search(text)
        if m:
            return m.group("old"), m.groupdict().get("new")
    return None, None


def _moving_off(text: str, st: dict) -> str:
    """A decision settled after the user said to move away from a named choice ("Koin was a mistake ...
    Let's go back to ... plain constructor injection"), saying so, so that it retires the rules that chose it
    (consolidate._switch_targets): "... (switched from Koin)."."""
    off = st.get("moving_off")
    if not off:
        return text
    return _switched(text, off["old"], off.get("new"))


def _switched(text: str, old: str, new=None) -> str:
    """text saying the choice it moves away from, in the form consolidate._switch reads as a switch, unless it
    says what it replaces already (consolidate.switch_parts: a "from" of a number, "from 3.8 s", is none)."""
    from cortex.curate.consolidate import switch_parts
    if switch_parts(text)[0]:
        return text
    return "%s (switched from %s%s)." % (text.rstrip(". "), old, " to %s" % new if new else "")


REQUEST_CHARS = 200  # of a request the state keeps (as extract keeps the last prompt)


def _bounded(s: str) -> str:
    """At most REQUEST_CHARS characters, cut at a space: the state outlives the run, and a token glued to a
    URL that the redactor could not tell apart ("…&cghp_…") must not be kept whole with it."""
    from cortex.model import redact
    from cortex.model.clip import shorten
    return shorten(s, REQUEST_CHARS, redact.cut)


def change_request(text: str):
    """{names, text, values, old, new} of a user's turn that asks for something (nothing hypothetical or put
    off) about named code, or in five words or more, or None: the names; the request's first two sentences
    (when it names no code: those that set a value, else those that ask for a change, else its last two);
    the values it sets; the choice it moves away from and the one it moves to, when it says.  Questions are
    not requests, but a request may come with one ("Let's bump the dispatch radius to 5000. Can you check the
    numbers first though?"), and may be one ("Can you switch it over?")."""
    prose = _prose(text).strip()
    if not prose or HYPOTHETICAL_RE.match(prose):
        return None
    if UNDECIDED_RE.search(prose) or POSTPONE_RE.search(prose):
        return None
    sents = [_tidy(x) for x in _sentences(prose)]
    asks = [x for x in sents if x and (not (x.endswith("?") or QUESTION_START_RE.match(x))
                                       or POLITE_REQUEST_RE.match(x) and CHANGE_VERB_RE.search(x))]
    if not asks or len(asks) < len(sents) and not any(CHANGE_VERB_RE.search(x) for x in asks):
        return None  # a report and a question ("We're seeing timeouts again at the Friday peak. Can you dig in?")
    names = [n for n in _names(text) if not incidental(n, True)]
    if not names and len(" ".join(asks).split()) < 5:
        return None
    if names:
        said = asks[:2]
    else:  # what is asked comes after why ("... pen test report came back. they want max 8. can you change it")
        valued = [x for x in asks if VALUE_DIGIT_RE.search(x)]
        changing = [x for x in asks if CHANGE_VERB_RE.search(x)]
        said = (sorted(valued, key=lambda x: not CHANGE_VERB_RE.search(x))[:2] or changing[:2] or asks[-2:])
        said = [x for x in asks if x in said]
    from cortex.curate.consolidate import NUMBER_RE  # what consolidate.values reads as a value
    old, new = switch_request(" ".join(asks))
    # the words that set the value ("Let's bump the dispatch radius to 5000."), for a confirmation that is
    # only the code
    loose = [_tidy(x) for x in LOOSE_SENT_RE.split(" ".join(asks)) if x and x.strip()]
    asked = [x for x in loose if VALUE_DIGIT_RE.search(x) and CHANGE_VERB_RE.search(x)][:1]
    return {"names": names, "text": _bounded(" ".join(x.rstrip(".?").rstrip() + "." for x in said if x)),
            "asked": _bounded(asked[0].rstrip(".?").rstrip() + ".") if asked else None,
            "values": sorted(set(NUMBER_RE.findall(" ".join(x for x in asks if VALUE_DIGIT_RE.search(x))))),
            "old": old, "new": new}


# the value a change request says it replaces: "from 3 hours to 90 minutes", "instead of 24h"
OLD_VALUE_RE = re.compile(r"\bfrom\s+(?P<old>\d+(?:[.,]\d+)?\s*(?:[a-z]+\b)?)\s+to\s+\d|"
                          r"\b(?:instead\s+of|rather\s+than)\s+(?P<old2>\d+(?:[.,]\d+)?\s*(?:[a-z]+\b)?)", re.I)


def _with_old_value(done: str, request: str) -> str:
    """The confirmed change with the value the user said it replaces, when the user said one and the change
    does not: "`SENSOR_TIMEOUT` is 90 minutes (instead of 3 hours)."  consolidate.changed_targets then knows
    which earlier rule holds the old value."""
    m = OLD_VALUE_RE.search(request or "")
    if not m or re.search(r"\b(?:instead\s+of|rather\s+than|from)\b", done, re.I):
        return done
    from cortex.curate.consolidate import NUMBER_RE  # what consolidate.values reads as a value
    old = " ".join((m.group("old") or m.group("old2")).split())
    if old.split()[0] in NUMBER_RE.findall(done):
        return done  # the "old" value is the one the change sets
    return "%s (instead of %s)." % (done.rstrip(". "), old)



def _as_change(done: str, change: dict) -> str:
    """The decision a confirmed change makes: the assistant's statement, with what the user asked in the
    user's words when the statement is only the code (`FREE_CANCEL_WINDOW = 5.minutes`: "free cancel window
    → 5 minutes"), the value it replaces when the user said one, and the choice it moves away from ("switched
    from OneSignal to FCM", "switched from Koin") when the user named it and the statement does not say so."""
    asked = change.get("asked") or change.get("text")
    if CODE_SETS_RE.search(done) and len(CODE_SETS_RE.sub("X", done).split()) < 6 and asked and asked.rstrip(".") not in done:
        done = "%s: %s" % (done.rstrip(". "), asked)
    done = _with_old_value(done, change.get("text"))
    return _switched(done, change["old"], change.get("new")) if change.get("old") else done


# a name set to a value in code: `FREE_CANCEL_WINDOW = 5.minutes`
CODE_SETS_RE = re.compile(r"`[A-Za-z_][\w.]*\s*=\s*[^`\s][^`]*`")
# a turn that opens by reporting the change as a return or a switch ("Reverted to nightly retraining:")
REVERTED_RE = re.compile(r"^(?:\*\*)?(?:reverted|rolled\s+back|switched(?:\s+back)?|moved(?:\s+back)?|went\s+back|"
                         r"back)\s+to\b", re.I)


# a turn that opens by summing the work up ("Summary:", "Both done:", "In short:"): what follows is how it is now
SUMMED_UP_RE = re.compile(r"^(?:\*\*)?(?:summary|in\s+short|tl;?dr|to\s+sum\s+up|(?:both|all)\s+done|"
                          r"all\s+(?:three|four)\s+done)(?:\*\*)?\s*:", re.I)


def _sets_requested(s: str, request_values) -> bool:
    """Whether a sentence sets a name in code to a value the request asked for (`SESSION_TTL = 14.days` for
    "make the login timeout 14 days")."""
    if not request_values:
        return False
    from cortex.curate.consolidate import NUMBER_RE
    return any(set(NUMBER_RE.findall(m.group(0))) & set(request_values) for m in CODE_SETS_RE.finditer(s))


def _names_choice(s: str, choice) -> bool:
    return bool(choice) and re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(choice), s, re.I) is not None


def change_confirmed(prose: str, change: dict):
    """The sentence of an assistant turn that states how the code a requested change names behaves now, or
    None: it says "now" (or "changed X to Y"), or the turn opens by reporting the work done ("All set: `x()`
    runs at 04:00") or summing it up; or it sets a name in code to the value the request asked for.  A
    request that moves to a named choice is confirmed by the first such sentence that names it."""
    names = change.get("names") or []
    first = prose.lstrip()
    done = bool(WORK_DONE_RE.match(first) or REVERTED_RE.match(first) or SUMMED_UP_RE.match(first))
    sents = list(_sentences(prose))
    found = []
    for i, s in enumerate(sents[:8]):
        s = CONFIRM_LEAD_RE.sub("", _tidy(s)).strip()
        summed = bool(SUMMED_UP_RE.match(s))
        s = SUMMED_UP_RE.sub("", s).strip() if summed and len(SUMMED_UP_RE.sub("", s).strip()) > 1 else s
        if s.endswith(":"):  # "Reverted to nightly retraining:" and the list of how it works now
            items = [_tidy(x).rstrip(".;") for x in sents[i + 1:i + 5] if x.strip()]
            items = [x for x in items if not (WILL_DO_RE.match(x) or NARRATION_RE.search(x))]
            s = (s + " " + "; ".join(items) if items else s)
            if summed or SUMMED_UP_RE.match(s):
                s = SUMMED_UP_RE.sub("", s).strip()
                summed = True
        sets = _sets_requested(s, change.get("values"))
        short = len(s.split()) < 4 and not CODE_SETS_RE.search(s)  # "`FREE_CANCEL_WINDOW = 5.minutes`" is enough
        if (not s or s.endswith("?") or short or NARRATION_RE.search(s) or HYPOTHETICAL_RE.match(s)
                or WILL_DO_RE.match(s)  # "I'll make every file import ...": what it will do, not how it is now
                or not (done or summed or sets or NOW_STATES_RE.search(s))):
            continue
        # a request that named no code ("change the late cancellation window to 48 hours") is confirmed by a
        # statement that names the code it changed (`LATE_CANCEL_WINDOW`); either is kept only when it
        # replaces an earlier rule on that code (consolidate.changed_targets)
        idents = set(subjects(s))
        if (sets or idents & set(names) or not names and [n for n in idents if not is_path(n)]
                or _names_choice(s, change.get("new"))):
            found.append(cap_first(s.rstrip(".") + "."))
            if not change.get("new") or _names_choice(s, change["new"]):
                return found[-1]
    return found[0] if found else None


# after an agreement (or a rule the user dictated): the assistant's next words restate it ("OK: one SMS 2 days
# before ...", "Got it: - client cancels < 24 hours -> deposit forfeited ..."), or report it done with how the
# code behaves now ("Done: `verify_signature()` checks LabLink's HMAC signature ...")
DONE_RECAP_RE = re.compile(r"^\s*(?:\*\*)?(?:(?P<heard>ok(?:ay)?|got\s+it|understood|noted|will\s+do)|done|all\s+set|"
                           r"implemented)(?:\*\*)?\s*(?P<sep>[.:—–!])\s*(?P<body>.*)", re.I)
STATUS_ONLY_RE = re.compile(r"^(?:all\s+)?(?:the\s+)?(?:tests?|suite|ci|build|lint|checks?|pr|branch|commit)\b", re.I)
GERUND_RE = re.compile(r"^\w+ing\b(?!\s+(?:is|are|was|were|stays?|keeps?|gets?|must|should|only|never|always)\b)", re.I)
WILL_DO_RE = re.compile(r"^(?:I'?ll|I\s+will|let\s+me|I'?m\s+going\s+to|going\s+to|next\b|now\s+I)", re.I)
NOT_DOING_RE = re.compile(r"^(?:not\s+doing|rejected|won'?t\s+do|dropped|out\s+of\s+scope)\b", re.I)
SUMMARY_LEAD_OK = re.compile(r"(?:agreed|decided|settled|decision|rule|policy|convention|agreement)", re.I)
BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+)$")

# -- rules the user states --------------------------------------------------------------------------
RULE_RE = re.compile(
    r"^(?:(?:and|also|but|ok(?:ay)?|so|please|oh|btw|actually|one\s+more\s+thing|important|note|rule(?:\s+of\s+thumb)?)"
    r"\s*[,:!—–-]?\s+)*(?:always\b|never\b(?!\s*mind)|don'?t\s+ever\b|do\s+not\s+ever\b|from\s+now\s+on\b|"
    r"going\s+forward\b|only\s+(?:ever\s+)?(?:retry|use|call|run|accept|allow|write|read|log|deploy|merge|cache|"
    r"send|return|store|keep|touch|change|bump|release|push)\b|keep\s+(?:ours|theirs|mine|both|our\s+version|"
    r"their\s+version|the\s+existing|the\s+current|the\s+old)\b|make\s+sure\s+(?:to\s+|that\s+|we\s+|you\s+)?"
    r"(?:always|never)\b|(?:we|you)\s+(?:must|should)\s+(?:always|never|not)\b|(?:it|that|this|they)\s+(?:must|"
    r"should)\s+(?:always|never)\b)|\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\b(?:should|must)\s+(?:always|never)\b|"
    r"\b(?:don'?t|do\s+not)\s+ever\b|\bmust\s+not\b|\bwe\s+(?:always|never)\s+(?![a-z]*ed\b)[a-z]+\b|\bkeep\s+(?:ours|theirs|our\s+version|their\s+version)\b|\bis\s+(?:not\s+)?allowed\s+to\b|\bthe\s+rule\s+is\b", re.I)
RULE_EXCLUDE_RE = re.compile(r"\bnever\s*mind\b|\b(?:always|never)\s+(?:been|had|did|was|were|worked|works|work|fails?|"
                             r"failed|seen|saw|happens?|happened|knew|know|understood|gets?|got|used|liked|thought|"
                             r"noticed|wanted|seems?|seemed|forget|forgot|remember|tried|heard|expected|imagined|"
                             r"realized|realised)\b|^\s*(?:I|I'?ve|I'?m|you\s+"
                             r"always|you\s+never)\b|\b(?:would|could|might)\b|^\s*(?:if|what\s+if|suppose|imagine|"
                             r"maybe|perhaps|should\s+we|do\s+we|can\s+we|would)\b", re.I)
ANAPHORA_RE = re.compile(r"\b(?:it|its|this|that|these|those|there|here|ours|theirs|the\s+(?:function|method|file|"
                         r"module|class|endpoint|job|handler|helper|test|component|service|script|query|rule))\b", re.I)

# -- the user turns down an alternative, with the reason ----------------------------------------------
REJECT_RE = re.compile(
    r"^\s*(?:(?:no|nope|nah)\b[\s,.!;:—–-]*)?(?:(?:definitely|please|but)\s+)?(?:not|no|don'?t\s+use|never\s+use|avoid)\s+"
    r"(?P<alt>(?:a|an|the|any|another)?\s*[^—–:;,.!?()]{2,60}?)\s*(?:[—–:;,(]|\s-\s|\.\s|\s+(?:because|since|as|it|"
    r"they|that|which|those|these)\b)\s*(?P<reason>[^?]{12,})$", re.I)
# The user rules an approach out before anyone proposes it, with the reason: "Whatever we do, we shouldn't X:
# <reason>", "I don't want to X, by the way; <reason>", "And before you suggest it: let's not X. <Reason>."
RULED_OUT_RE = re.compile(
    r"^(?:[^.?!:;]{0,40}[,:]\s*)?(?:let'?s\s+not|(?:I|we)\s+(?:really\s+)?(?:don'?t|do\s+not)\s+want\s+(?:to|us\s+to)|"
    r"(?:we|you)\s+(?:shouldn'?t|should\s+not|mustn'?t|must\s+not)|please\s+(?:don'?t|do\s+not))\s+(?:just\s+|simply\s+)?"
    r"(?P<alt>[^—–:;,.!?()]{6,80}?)\s*(?:[—–:;,(]|\s-\s|\.\s|\s+(?:because|since|as)\b)\s*"
    r"(?:by\s+the\s+way\s*[;,:]?\s*)?(?P<reason>[^?]{12,})$", re.I)
RULED_OUT_WORDS = ("not", "n't", "dont", "shouldnt", "mustnt")  # every match of RULED_OUT_RE holds one
RULED_OUT_HEAD = RULED_OUT_RE.pattern[:RULED_OUT_RE.pattern.index("(?P<alt>")]
RULED_OUT_BARE_RE = re.compile(RULED_OUT_HEAD + r"(?P<alt>[^—–:;,.!?()]{6,80}?)[.!]?$", re.I)  # the reason follows
# the sentence after a bare "let's not X." is its reason when it explains ("Abandoned baskets would lock stock
# for hours"), not when it says what to do instead ("Do it at checkout")
EXPLAINS_RE = re.compile(r"^(?!(?:please\s+)?(?:do|use|make|put|keep|add|try|go|just|instead|rather|then|let'?s)\b)"
                         r".*\b(?:is|are|was|were|would|will|can'?t|cannot|won'?t|doesn'?t|didn'?t|makes?|breaks?|"
                         r"locks?|causes?|takes?|needs?|has|have|had)\b", re.I)
NOT_AN_ALT = re.compile(r"^(?:now|yet|today|really|sure|quite|exactly|that\s+way|at\s+all|for\s+now|so\s+fast|yet\s+\w+|"
                        r"this\s+time|right\s+now|needed|necessary|worth\s+it|a\s+problem|an\s+issue|bad|great|"
                        r"ideal|true|the\s+case|something|anything|much|many|all|every|"
                        # set phrases of small talk: "no worries, ...", "no doubt: ...", "not only ... but"
                        r"worr(?:y|ies)|doubts?|surprised?|kidding|joke|way|only|just|thanks|offen[cs]e|pressure|"
                        r"rush|hurry|sweat|fun|wonder|idea\s+(?:why|how|what|where|who)|clue|chance|matter|"
                        r"bother|harm|need\s+to|no|nope|nah|not|"  # "no no. <what to do instead>": an emphatic no
                        # an assent that starts with "no" ("no that's fine, just wanted to be sure it's intended")
                        r"(?:that'?s|thats|this\s+is|it'?s)\s+(?:fine|ok|okay|good|great|alright|all\s+right|"
                        r"correct|right|true|enough|it|intended|intentional|expected))\b|"
                        # the conversation itself ("no, not a decision -- just thinking aloud")
                        r"^(?:(?:a|an|the|any)\s+)?(?:(?:final|real|firm|formal|new)\s+)?(?:decision|rule|proposal|"
                        r"suggestion|question|request|plan|priority|requirement|commitment|big\s+deal|thing|"
                        r"problem|issue|blocker)s?(?:\s+(?:yet|now|for\s+now|just\s+yet|at\s+all))?$", re.I)
PRONOUN_ALT = re.compile(r"^(?:that|this|it|that\s+one|this\s+one|that\s+approach|this\s+approach|that\s+idea)$", re.I)
IMPERATIVE_RE = re.compile(r"^(?:(?:instead|rather)\s*[,:]?\s*)?(?:just\s+)?(?:use|go\s+with|make\s+it|let'?s\s+use|"
                           r"switch\s+to|do\s+it\s+(?:with|in|via)|put\s+it\s+in|store\s+it\s+in|run\s+it\s+(?:from|as|"
                           r"with|in|via)|have\s+it)\b", re.I)

SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[*])|(?<=[?!])\s+|\n+")  # after "?": whatever case comes next
# a reply typed in a hurry starts its sentences in lower case ("OK, makes sense, skip it. yes, but ...")
LOOSE_SENT_RE = re.compile(r"(?<=[.!?])\s+|\n+")
CODE_FENCE_RE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)


def _sentences(text):
    for s in SENT_RE.split(text):
        s = s.strip()
        if s:
            yield s


def _tidy(s: str) -> str:
    return " ".join(unmark(s).split())  # = re.sub(r"\s+", " ", ...).strip(): str.split splits at what \s matches


def _prose(text: str) -> str:
    return CODE_FENCE_RE.sub("\n", text or "")


def initial_state() -> dict:
    return {"proposal": None, "exchange": [], "accepted": None, "alternative": None, "settled": None}


# -- proposals ----------------------------------------------------------------------------------------

ASK_TAIL_RE = re.compile(r"\s*\?+$")
PROPOSING_WORD_RE = re.compile(r"\b(?:propose|suggest|recommend|I'?d)\b|^(?:\*\*)?alternative(?:\*\*)?\s*:|"
                               r"^(?:\*\*)?(?:counter|revised|updated|new)[\s-]?proposal(?:\*\*)?\s*:", re.I)


def proposal_of(text: str):
    """What an assistant turn puts to the user, or None: {text, options, recommended}.  A turn with no
    proposal marker and no closing ask proposes nothing; narration and offers to run routine work
    are not proposals."""
    prose = _prose(text)
    return _proposal(prose, [_tidy(s) for s in _sentences(prose)])


def _proposal(prose: str, tidied: list):
    """proposal_of, given the turn's prose and its sentences tidied (step computes them once a turn)."""
    options, downsides = {}, {}
    found = list(OPTION_RE.finditer(prose))
    for j, m in enumerate(found):
        label = (m.group("label") or m.group("label2")).upper()
        body = _tidy(m.group("text") or m.group("text2"))
        if label not in options and len(body.split()) >= 2:
            options[label] = body
            # what the turn says against it, in its own paragraph ("- But in poke mode the sensor holds a
            # worker slot the whole time"): the reason it is turned down when another option is picked
            block = prose[m.end():found[j + 1].start() if j + 1 < len(found) else len(prose)].split("\n\n")[0]
            against = DOWNSIDE_RE.search(_tidy(body + " " + block.replace("\n", " ")))
            if against:
                downsides[label] = against.group("reason").strip().rstrip(".")
    rec = RECOMMEND_RE.search(prose)
    numbered, by_number = {}, False
    if not options:
        # a numbered list is the options when the turn picks one by its number ("I'd go with 2"); else the
        # reply may pick one by number ("2, but cap each batch at 7 days"), so it is kept aside for that
        for m in NUMBERED_RE.finditer(prose):
            body = _tidy(m.group("text"))
            if m.group("n") not in numbered and len(body.split()) >= 2:
                numbered[m.group("n")] = body
        if rec and rec.group("label") in numbered:
            options, numbered, by_number = numbered, {}, True
    recommended = rec.group("label").upper() if rec and rec.group("label").upper() in options else None
    leads = {}
    # (a numbered list the turn recommends from is a choice, and keeps its bold leads: the reply may name one,
    # "the constraint." for "4. **An exclusion constraint** on appointments")
    if by_number or not options and (OPTIONS_WORD_RE.search(prose) or offered(prose)):
        # "Options: - **Keep sequential numbers.** Costs nothing, but ... - **Timestamp versions.** Name files
        # ...": the reply may pick one by naming it ("timestamp versions, yes")
        for n, m in enumerate(BOLD_LEAD_RE.finditer(prose), 1):
            body = _tidy(m.group("lead") + ("" if m.group("rest")[:1] in ":;,." else " ") + m.group("rest"))
            leads[str(n)] = {"lead": _tidy(m.group("lead")).rstrip(".:"), "text": body}
            against = DOWNSIDE_RE.search(body)
            if against:
                downsides[str(n)] = against.group("reason").strip().rstrip(".")
        if len(leads) < 2:
            leads = {}
    sents = [s for s in tidied if s and not OPTION_RE.match(s)]
    picked, asked = [], False
    for i, s in enumerate(sents):
        # the cheap tests first: most sentences are long and propose nothing
        if VAGUE_OFFER_RE.match(s):
            # "Want me to do it?" asks about the proposal the turn made, if it made one; the sentences before it
            # are not one by being before it (narration: "The dashboard is `npm run dev` in `opsboard/`.")
            asked = True
            continue
        if len(ASK_TAIL_RE.sub("", s).split()) <= 8 and ASK_RE.search(s):
            asked = True
            if not picked:  # "Sound good?" after the proposal itself: the prose before it
                before = [p for p in sents[max(0, i - 2):i] if not NARRATION_RE.search(p) and not p.endswith("?")
                          and not p.endswith(":")]
                picked.extend(before[-2:])
            continue
        if not (mentions_any(s, PROPOSAL_WORDS) and PROPOSAL_RE.search(s) or FIRM_RE.match(s)):
            continue
        if NARRATION_RE.search(s) or WEAK_ACTION_RE.search(s) or HYPOTHETICAL_RE.search(s):
            continue
        if REAFFIRM_RE.search(s):
            continue  # "so I'd stick with my suggestion": the earlier proposal stands, this is not a new one
        asked = asked or s.endswith("?")
        if s.endswith(":"):  # "Proposal:" and its list: the items are the proposal
            following = list(itertools.takewhile(lambda x: not OWN_NOT_HEAD_RE.match(x), sents[i + 1:i + 5]))
            # (the list ends where the turn says what it would not do: that is a rejection, not the proposal)
            items = [x.rstrip(".;") for x in following if x and not x.endswith("?") and not ASK_RE.search(x)]
            s = (s.rstrip(":") + ": " + "; ".join(items) + ".") if items else s
        picked.append(s)
    if not picked and not options and not leads:
        return None
    if not asked and not options and not leads and not any(PROPOSING_WORD_RE.search(p)
                                             or FIRM_RE.match(p) and len(prose.split()) <= 120 for p in picked):
        return None
    out = {"text": " ".join(picked[:3]), "options": options, "recommended": recommended}
    if downsides:
        out["downsides"] = downsides
    if len(numbered) >= 2:
        out["numbered"] = numbered
    if leads:
        out["leads"] = leads
    mine_not = own_ruled_out(prose)
    if mine_not:
        out["ruled_out"] = mine_not
    return out


# what the proposing turn itself turns down, with why ("What I'd not do: keep JWTs and add refresh tokens. It's
# the standard pattern ..., but here ...", "I considered pushing the whole menu over MQTT, but 1.4 MB messages
# ... is heavy", "Alternative I considered: export them to S3 and Glacier. It's cheap per GB, but ...")
_REASON = r"(?P<reason{n}>[^\n]{{10,300}}?)(?:[.!?](?=\s|$)|\n|$)"
OWN_NOT_RE = re.compile(
    r"(?:^|(?<=[.!?:]\s)|(?<=\n))(?:what\s+)?I(?:'?d\s+not|\s+wouldn'?t|\s+would\s+not)\s+do\s*:\s*"
    r"(?P<alt1>[^.!?\n]{3,160})[.!?]\s+" + _REASON.format(n=1) +
    r"|\bI\s+(?:also\s+)?considered\s+(?!it\b|that\b|this\b|whether\b)(?P<alt2>[^,;:.!?\n]{3,120}),?\s+but\s+" +
    _REASON.format(n=2) +
    r"|\b(?:the\s+|an\s+|one\s+)?alternative\s+I\s+considered\s*:\s*(?P<alt3>[^.!?\n]{3,160})[.!?]\s+" +
    _REASON.format(n=3), re.I)


# a sentence that opens such a statement (where a "Proposal:" list the turn sets out ends)
OWN_NOT_HEAD_RE = re.compile(r"^(?:what\s+)?I(?:'?d\s+not|\s+wouldn'?t|\s+would\s+not)\s+do\s*:|^I\s+(?:also\s+)?"
                             r"considered\s+(?!it\b|that\b|this\b|whether\b)|^(?:the\s+|an\s+|one\s+)?alternative\s+I\s+"
                             r"considered\s*:", re.I)


def own_ruled_out(prose: str) -> list:
    """[(approach, reason)] a proposing turn turns down itself (OWN_NOT_RE): kept as rejections when its
    proposal is agreed to, since then the user took the proposal with its reasons."""
    out = []
    for m in OWN_NOT_RE.finditer(prose or ""):
        n = next(i for i in (1, 2, 3) if m.group("alt%d" % i))
        alt, reason = _tidy(m.group("alt%d" % n)).strip(" ,"), _tidy(m.group("reason%d" % n)).strip()
        if len(alt.split()) >= 2 and len(reason.split()) >= 3 and not reason.endswith("?"):
            out.append([alt, reason.rstrip(".")])
    return out[:3]


# options set out as bullets with a bold lead, in a turn that calls them options
BOLD_LEAD_RE = re.compile(r"(?m)^\s*(?:[-*]|\d+[.)])\s+\*\*(?P<lead>[^*\n]{2,90}?)\*\*\s*(?P<rest>[^\n]*)$")
ECHO_FILLER = frozenset("let's lets go then please pls definitely".split())
ECHO_OTHER = 2
ECHO_TERSE = 2  # words of a reply's first clause that name an option by one word of its lead
ECHO_STOP = frozenset("the a an and or of to in on for with keep use go yes ok okay sure we our it its".split())


def _first_clause_words(line: str) -> set:
    return set(re.findall(r"[a-z0-9][\w-]*", re.split(r"[,.;:!?]|\s[-–—]\s", line, maxsplit=1)[0].lower()))


def _terse(line: str) -> bool:
    """Whether a reply's first clause is one or two words besides "ok", "the", "let's", ...: a name said alone."""
    return 0 < len(_first_clause_words(line) - ECHO_STOP - ECHO_FILLER) <= ECHO_TERSE


def _echoed(first_line: str, leads: dict, bare: bool = False):
    """The label of the one option whose bold lead the reply's first clause names ("timestamp versions, yes"
    for "**Timestamp versions.**"), else None: all its words, or two of them when it has more.  `bare`: the
    clause must say little else (at most ECHO_OTHER words besides the lead's and "ok", "yes", ...)."""
    said = _first_clause_words(first_line)
    # a clause of one or two words names an option by one word of its lead ("local." for "**Local
    # notification on the device**", "the constraint." for "**An exclusion constraint**"), if only one has it
    terse = _terse(first_line)
    hits = []
    for label, opt in leads.items():
        words = [w for w in re.findall(r"[a-z0-9][\w-]*", opt["lead"].lower()) if w not in ECHO_STOP]
        if bare and len(said - set(words) - ECHO_STOP - ECHO_FILLER) > ECHO_OTHER:
            continue
        if words and sum(w in said for w in words) >= (1 if terse else min(2, len(words))):
            hits.append(label)
    return hits[0] if len(hits) == 1 else None


def _statement(proposal: str) -> str:
    """A proposal as a statement: "Should we make X do Y?" -> "Make X do Y"."""
    out = []
    for s in _sentences(proposal):
        if ASK_RE.search(s) and len(s.split()) <= 8 or VAGUE_OFFER_RE.match(s):
            continue
        s = re.sub(r"^(?:\*\*)?alternative(?:\*\*)?\s*:\s*", "", s, flags=re.I)
        s = LEAD_RE.sub("", FIRM_RE.sub("", s, count=1), count=1).strip()
        # "Want me to switch it to pinned versions?" -> "Switch it to pinned versions"
        s = re.sub(r"^(?:(?:do\s+you\s+)?want|would\s+you\s+like)\s+me\s+to\s+|^(?:shall|should)\s+I\s+", "", s,
                   flags=re.I)
        # "For `x()` I'd retry 3 times" -> "For `x()`: retry 3 times"
        s = re.sub(r"^((?:for|in|on|with)\s+[^,]{1,60}?),?\s+(?:I'?d|we'?d|I\s+would|we\s+should|I\s+(?:suggest|propose|"
                   r"recommend)(?:\s+(?:that\s+)?we)?)\s+", r"\1: ", s, count=1, flags=re.I)
        s = re.sub(r"[\s?]+$", "", s)
        # the closing ask ("..., right?", "... sound good?"); "to the right" is the proposal's own word
        s = re.sub(r"(?:,\s*(?:ok|okay|right|agreed)|,?\s*(?:sound\s+good|does\s+that\s+work))\s*$", "", s, flags=re.I)
        if s:
            out.append(cap_first(s.rstrip(".") + "."))
    return " ".join(out)


# -- per entry ---------------------------------------------------------------------------------------

def _subject_prefix(text: str, *contexts) -> str:
    """"For `x`: " when `text` names no code and a context does, else "".  A context is either words that
    state the rule (the proposal, the agreed text: their first name is the subject) or the names of the
    exchange, [[name, who]] (`_subject_of`)."""
    if subjects(text):
        return ""
    for ctx in contexts:
        name = _subject_of(ctx) if isinstance(ctx, list) else next(iter(subjects(ctx or "")), None)
        if name:
            return "For `%s`: " % name.strip("`")
    return ""


_WHO_RANK = {"proposal": 0, "user": 1, "assistant": 2}


def _subject_of(names: list):
    """The name the exchange is most likely about, or None: a function or class the proposing turn or the
    user names, then a file they name (the proposal's first), then one the assistant mentioned otherwise
    (the latest).  A name met on the way (a test or scratch file, a command, a standard library call:
    `subjects.incidental`) is none."""
    ranked = sorted((who == "assistant", is_path(n), _WHO_RANK.get(who, 2), i if who != "assistant" else -i, n)
                    for i, (n, who) in enumerate(names or []) if not incidental(n, who == "user"))
    return ranked[0][-1] if ranked else None


@functools.lru_cache(maxsize=8)
def _names(text: str) -> tuple:
    """The names a turn's prose holds (a turn's text is looked at up to three times: `_mention`)."""
    return tuple(subjects(_prose(text)))


def _mention(exchange: list, text: str, who: str) -> list:
    """The exchange's names with those `text` names added, the latest last; a name the user or the proposal
    named keeps that rank when the assistant says it again."""
    out = [list(e) for e in exchange or []]
    for n in _names(text):
        prev = next((e for e in out if e[0] == n), None)
        if prev:
            out.remove(prev)
            who = min(who, prev[1], key=lambda w: _WHO_RANK.get(w, 2))
        out.append([n, who])
    return out[-EXCHANGE_KEEP:]


def _condition(rest: str):
    """(condition or '', ok): what the user added after agreeing.  ok is False when the reply goes on
    with a question or a postponement (not a settled agreement)."""
    rest = re.sub(r"^[\s,.!:;—–-]+", "", rest)
    first = next(iter(_sentences(rest)), "") if rest.strip() else ""
    if not first:
        return "", True
    if POSTPONE_RE.search(rest.split("\n")[0]):
        return "", False
    if first.rstrip().endswith("?") or QUESTION_START_RE.match(first) and "?" in first:
        return "", False
    named = COND_LEAD_RE.match(first)
    if named and len(first[named.end():].split()) >= 3:
        return _tidy(first[named.end():]).rstrip("."), True
    if CONDITION_RE.match(first) or re.match(r"^(?:but|though|although)\s+\w+\s+\w+", first, re.I):
        return _tidy(re.sub(r"^\s*(?:(?:but|and|though|although|however)\s+(?=only|except|unless|not|as long)|"
                            r"(?:though|although)\s+)", "", first, flags=re.I)).rstrip("."), True
    return "", True


# words that open a condition or a reason: lower-cased when it follows the rule after a dash or a colon
COND_OPENERS = frozenset("except unless only if when whenever with without for not excluding provided also never "
                         "always plus leave skip ignore treat limit cap keep make allow but and or as so".split())


def _mid_sentence(s: str) -> str:
    """`s` as it reads after a dash or a colon: a first word that only opens the sentence ("Except", "For",
    "It", "That's") in lower case ("Actually, wait. Except hazardous goods" -> "— except hazardous goods");
    a name, "I" or any other word keeps its case."""
    from cortex.store.terms import STOPWORDS
    s = s.strip()
    word = s.split(None, 1)[0].rstrip(",;:") if s else ""
    bare = word.replace("'", "").replace("’", "")
    if (bare[:1].isupper() and bare[1:].islower() and bare.isalpha() and not word.startswith(("I'", "I’"))
            and bare.lower() in COND_OPENERS | STOPWORDS):
        return s[0].lower() + s[1:]
    return s


def _with_condition(statement: str, cond: str) -> str:
    if not cond:
        return statement
    if not statement:
        return cap_first(cond) + "."
    return "%s — %s." % (statement.rstrip("."), _mid_sentence(cond).rstrip("."))


def user_turn(text: str, st: dict):
    """[(type, text, confidence, layer-kind)] for a user turn, given the proposal it answers."""
    out = []
    prose = _prose(text).strip()
    if not prose or prose.startswith("/"):
        return out
    prop = st.get("proposal")
    alt = st.get("alternative")
    lead = []  # rejected records that come before the agreement in the same reply
    if prop and not UNDECIDED_RE.search(prose) and not POSTPONE_RE.search(prose.split("\n")[0]):
        # "Fair, not that then. Go ahead" / "No, <reason>. Your first idea is better, go with that": the agreement
        # may follow a concession or the refusal of the alternative the assistant also offered
        sents0 = [x.strip() for x in LOOSE_SENT_RE.split(prose) if x.strip()]
        for j, sj in enumerate(sents0[:4]):
            if j == 0 or not (AGREE_RE.match(sj) or FIRST_IDEA_RE.search(sj) or CHOOSE_RE.match(sj)):
                continue
            before = " ".join(sents0[:j])
            dec = DECLINE_ALT_RE.match(before)
            if CONCEDE_RE.match(before):
                if alt and alt.get("by") == "user" and alt.get("reason"):
                    lead.append(("rejected", _rejection(alt["text"], alt["reason"], prop, st), USER_REJECTED - 0.05,
                                 "rejected"))
            elif dec and alt and alt.get("by") == "assistant" and not before.rstrip().endswith("?"):
                reason = dec.group("reason").strip().rstrip(".")
                if len(reason.split()) >= 3:
                    lead.append(("rejected", _rejection(alt["text"], reason, prop, st), USER_REJECTED, "rejected"))
            else:
                break
            prose = " ".join(sents0[j:])
            if FIRST_IDEA_RE.search(prose) and not AGREE_RE.match(prose):
                prose = "go with that. " + prose[FIRST_IDEA_RE.search(prose).end():].lstrip(" ,.;")
            break
        if (not lead and alt and alt.get("by") == "user" and alt.get("reason") and AGREE_RE.match(prose)
                and not DECLINE_RE.match(prose)):
            # "why not just X?" -- the assistant says why not -- "Right, agreed, go with that": the user takes the
            # reason, so X is turned down with it, and the proposal is agreed
            lead.append(("rejected", _rejection(alt["text"], alt["reason"], prop, st), USER_REJECTED - 0.05,
                         "rejected"))
    first_line = prose.split("\n")[0]
    choose = CHOOSE_RE.match(first_line)
    # naming an option picks it ("reverse DNS. how long do we cache"), but not in a reply that talks about it
    # and asks ("i've used loguru before and liked it tbh. whats the actual downside for us")
    echo = (_echoed(first_line, prop["leads"], bare=_asks(prose)) if prop and prop.get("leads") and not choose
            else None)
    agree = AGREE_RE.match(prose)
    cond_only = COND_ONLY_RE.match(prose)
    if (prop and (choose or echo or agree or cond_only) and not DECLINE_RE.match(prose)
            and not UNDECIDED_RE.search(prose)):
        statement = None
        if echo:
            leads = prop["leads"]
            statement = cap_first(leads[echo]["text"].rstrip(".") + ".")
            lead.extend(_passed_over(prop, echo, leads, _lead_name))
            rest = re.split(r"[,.;:!?]", first_line, maxsplit=1)[1] if re.search(r"[,.;:!?]", first_line) else ""
            rest = re.sub(r"^\s*(?:yes|yep|yeah|ok(?:ay)?|sure|please|pls)\b[\s,.!]*", "", rest, flags=re.I)
        elif choose:
            opts = prop.get("options") or prop.get("numbered") or {}
            label = choose.group("label") or choose.group("bare")
            if choose.group("ord") and opts:
                keys = sorted(opts)
                idx = ORDINALS[choose.group("ord").lower()]
                label = keys[idx] if -len(keys) <= idx < len(keys) else None
            if label and label.upper() in opts:
                statement = cap_first(opts[label.upper()].rstrip(".") + ".")
                lead.extend(_passed_over(prop, label.upper(), opts, _alt_of))
            elif choose.group("ord") and prop.get("leads"):
                # "the second one. ulid is cute but ...": the second bold lead, whatever else the reply names
                picked = _ordinal_pick(prop, choose.group("ord"))
                if picked:
                    statement = picked[1]
                    lead.extend(_passed_over(prop, picked[0], prop["leads"], _lead_name))
            rest = prose[choose.end():]
        else:
            rest = prose[agree.end():] if agree else prose
            if prop.get("options") and not prop.get("recommended") and not prop.get("text"):
                statement = None  # "yes" to several options with no recommendation: which one?
            elif prop.get("options") and prop.get("recommended"):
                statement = cap_first(prop["options"][prop["recommended"]].rstrip(".") + ".")
            else:
                picked = _ordinal_pick(prop)
                statement = picked[1] if picked else _statement(prop.get("text") or "")
                if picked and prop.get("leads"):
                    lead.extend(_passed_over(prop, picked[0], prop["leads"], _lead_name))
        cond, ok = _condition(rest)
        if echo and not ok and _terse(first_line) and not POSTPONE_RE.search(rest):
            # "local. the no-network thing is real. but what about extending from another device?": the option
            # named alone is picked; the question after it is about the choice made
            cond, ok = "", True
        if statement and ok and len(statement.split()) >= 3:
            text_ = _with_condition(statement, cond)
            text_ = _subject_prefix(text_, prop.get("text"), " ".join((prop.get("options") or {}).values()),
                                    st.get("exchange")) + text_
            out.extend(lead + _own_rejections(prop, lead))
            out.append(("decision", text_, ACCEPTED, "accepted"))
            # "yes. ack only after the commit, that's the rule from now on": the user's own rule in the reply
            # that agrees is kept too, in the user's words (a condition already appended is not said twice)
            return out + [r for r in _stated_rules(_sentences(rest), prop, st)
                          if not cond or _tidy(cond).rstrip(".") not in r[1]]
        if agree and not choose:
            # agreed, but to words that make no rule alone ("Proposal:" and a list, "yes" to options with no
            # pick): the assistant's restatement that follows ("Done. `fct_sales` is now incremental ...") is it
            out.extend(lead + _own_rejections(prop, lead))
            out.append((AGREED, "", ACCEPTED, "accepted"))
            return out
    # the user turns the proposal down with a reason ("hmm no. 1 hour before is useless, if they can't come at
    # that point they can't rebook"): the proposal is what was turned down
    if prop and prop.get("text") and not prop.get("options") and not UNDECIDED_RE.search(prose):
        no = PROPOSAL_DECLINED_RE.match(prose)
        reason = _tidy(prose[no.end():]) if no else ""
        first = [x for x in LOOSE_SENT_RE.split(reason) if x and x.strip()][:1]
        if (first and not first[0].rstrip().endswith("?") and len(first[0].split()) >= 5
                and REASON_CUE_RE.search(first[0]) and not POSTPONE_RE.search(first[0])):
            statement = _statement(prop["text"]).rstrip(".")
            if len(statement.split()) >= 3:
                return out + [("rejected", _rejection(statement[:1].lower() + statement[1:], first[0], prop, st),
                               USER_REJECTED - 0.05, "rejected")]
    # the user turns down the alternative with a reason, and maybe says what to do instead
    sents = list(_sentences(prose))
    for i, s in enumerate(sents):
        s = _tidy(s)
        if s.endswith("?"):
            continue
        m = REJECT_RE.match(s) if i == 0 or re.match(r"^(?:no|not|don'?t|never|avoid)\b", s, re.I) else None
        found, kind = ((m.group("alt"), m.group("reason")) if m else None), "rejected"
        if found is None:  # ruled out unasked: kept only if about the work (extract.UNASKED_KINDS)
            found, kind = _ruled_out(s, sents[i + 1] if i + 1 < len(sents) else ""), "ruled-out"
        if found and not NOT_AN_ALT.match(found[0].strip()):
            alt, reason = found[0].strip(), found[1].strip().rstrip(".")
            if PRONOUN_ALT.match(alt):
                if not prop or not prop.get("text"):
                    continue
                alt = _statement(prop["text"]).rstrip(".")
            if len(reason.split()) < 3 or POSTPONE_RE.search(reason):
                continue
            text_ = "Not %s: %s." % (alt, _mid_sentence(reason))
            text_ = _subject_prefix(text_, prop and prop.get("text"), st.get("exchange")) + text_
            rejection = ("rejected", text_, USER_REJECTED, kind)
            for later in sents[i + 1:i + 3]:
                later = _tidy(later)
                if IMPERATIVE_RE.match(later) and not later.endswith("?") and len(later.split()) >= 3:
                    d = "%s (instead of %s)." % (later.rstrip("."), alt)
                    out.append(("decision", _subject_prefix(d, prop and prop.get("text"), st.get("exchange")) + cap_first(d),
                                USER_RULE, "rule"))
                    break
            return out + [rejection]  # the choice first, then what it was chosen over
    return out + _stated_rules(sents, prop, st)


INTERJECTIONS_RE = re.compile(r"^(?:(?:no+|nope|nah|ok(?:ay)?|yes|yep|yeah|sure|hm+|wait|right|fine|good|great|"
                              r"perfect|cool|thanks|thx|ty)\b[\s,!]*)+[.!,]+\s+(?=\S)", re.I)


# a recommendation that names an option by its place ("I'd do the first.")
ORDINAL_REF_RE = re.compile(r"\b(?:I'?d|I\s+would|my\s+(?:pick|vote)\s+is)\s+(?:\w+\s+){0,2}?(?:the\s+)?"
                            r"(?P<ord>first|second|third|fourth|last)(?:\s+(?:one|option|approach))?\b", re.I)


def _ordinal_pick(prop: dict, place: str = None):
    """(key, statement) of the option named by its place: `place` ("second"), else the place a recommendation
    names ("I'd do the first."); None when there is none."""
    m = ORDINAL_REF_RE.search(prop.get("text") or "") if place is None else None
    items = prop.get("leads") or prop.get("numbered") or {}
    if not (m or place) or not items:
        return None
    keys = sorted(items, key=lambda k: int(k) if k.isdigit() else 0)
    idx = ORDINALS[(place or m.group("ord")).lower()]
    if not -len(keys) <= idx < len(keys):
        return None
    item = items[keys[idx]]
    text = item["text"] if isinstance(item, dict) else item
    return keys[idx], cap_first(_tidy(text).rstrip(".") + ".")


def _passed_over(prop: dict, pick: str, items: dict, name) -> list:
    """Rejected candidates for the options other than `pick` that the proposal gave a downside (no subject
    prefix: the exchange's names are the options' details, not theirs); `name(item)` says what was passed over."""
    return [("rejected", _rejection(name(items[other]), why, None, {}), USER_REJECTED - 0.1, "rejected")
            for other, why in sorted((prop.get("downsides") or {}).items())
            if other != pick and other in items and len(why.split()) >= 3]


def _own_rejections(prop: dict, said: list) -> list:
    """Rejected candidates for what the agreed proposal turned down itself (`own_ruled_out`), less those a
    rejection of the reply already names."""
    out = []
    for alt, why in prop.get("ruled_out") or ():
        if not any(alt.lower()[:30] in r[1].lower() for r in said):
            out.append(("rejected", _rejection(alt, why, None, {}), USER_REJECTED - 0.1, "rejected"))
    return out


def _lead_name(item: dict) -> str:
    """An option's bold lead inside a sentence: "Not a ring buffer", but "Not UUIDv4", "Not ULID"."""
    lead = item["lead"]
    return lead[:1].lower() + lead[1:] if lead[1:2].islower() else lead


# a question typed without its question mark opens with a question word ("whats the downside for us"); "do
# it", "is fine" and the like open requests and statements as often as questions
WH_START_RE = re.compile(r"^\s*(?:(?:but|and|so|ok|okay)\s+)?(?:what|whats|what's|why|how|hows|how's|who|where|"
                         r"which)\b", re.I)


def _asks(prose: str) -> bool:
    """Whether a turn asks something: a sentence ends with "?" or opens with a question word."""
    return any(x.rstrip().endswith("?") or WH_START_RE.match(x) for x in LOOSE_SENT_RE.split(prose) if x and x.strip())


def _stated_rules(sents, prop, st) -> list:
    """The rules the user states in these sentences ("never retry on 4xx", "from now on ...")."""
    out = []
    for s in sents:
        # people type lower case after a full stop, so "no no. btw we always use UTC in logs. the fleet is ..."
        # is one sentence: the exclamations that open it are not part of the rule ("180 then. keep it simple.
        # and log boot-to-connack from now on" keeps all it says)
        s = INTERJECTIONS_RE.sub("", _tidy(s))
        if s.endswith("?") or len(s.split()) < 3 or not RULE_RE.search(s) or RULE_EXCLUDE_RE.search(s):
            continue
        if POSTPONE_RE.search(s) and not re.search(r"\bfrom now on\b|\bgoing forward\b", s, re.I):
            continue
        # "oh and never retry on 4xx": the words that lead into the rule are not part of it
        text_ = cap_first(RULE_LEAD_RE.sub("", s).rstrip(".") + ".")
        prefix = ""
        if not subjects(text_) and ANAPHORA_RE.search(text_):
            prefix = _subject_prefix(text_, prop and prop.get("text"), st.get("exchange"))
        out.append(("decision", prefix + text_, USER_RULE, "rule"))
    return out


RULE_LEAD_RE = re.compile(r"^(?:(?:oh|and|also|btw|so|ok(?:ay)?|actually|but|wait|one\s+more\s+thing|important|"
                          r"note)\b[\s,:!—–-]*)+(?=\S)", re.I)


def _ruled_out(s: str, nxt: str):
    """(approach, reason) of a sentence that rules an approach out up front, or None; `nxt` is the sentence
    after it, the reason of a bare "let's not X." when it explains.  A deferral rules nothing out ("let's
    not pick one yet: I want to see the load test first")."""
    if not mentions_any(s, RULED_OUT_WORDS):
        return None
    m, nxt = RULED_OUT_RE.match(s), _tidy(nxt)
    if m:
        found = (m.group("alt"), m.group("reason"))
    elif nxt and not nxt.endswith("?") and EXPLAINS_RE.match(nxt) and RULED_OUT_BARE_RE.match(s):
        found = (RULED_OUT_BARE_RE.match(s).group("alt"), nxt)
    else:
        return None
    if UNDECIDED_RE.search(s) or POSTPONE_RE.search(s) or re.search(r"\b(?:yet|decide|choose|pick)\b", found[0], re.I):
        return None
    return found


# a reply that opens by turning the proposal down, then says why
PROPOSAL_DECLINED_RE = re.compile(r"^\s*(?:(?:hmm+|hm|well|sorry|honestly|nah|nope|no+)\b[\s,.!:;—–-]*)*"
                                  r"(?:no+|nope|nah)\b[\s,.!:;—–-]+", re.I)
# ... and the reason says why (a judgement or a consequence), not what to do or when
REASON_CUE_RE = re.compile(r"\b(?:because|since|too|useless|pointless|overkill|won'?t|can'?t|cannot|couldn'?t|"
                           r"doesn'?t|don'?t|isn'?t|aren'?t|wouldn'?t|breaks?|slow|expensive|risky|unsafe|wrong|"
                           r"bad|fails?|costs?|leaks?|means|never|would|lose|loses)\b", re.I)


def _rejection(alt: str, reason: str, prop, st) -> str:
    alt = re.sub(r"^(?:just|simply)\s+", "", _tidy(alt).rstrip(".?"), flags=re.I)
    text_ = "Not %s: %s." % (alt, _mid_sentence(_tidy(reason)).rstrip("."))
    return _subject_prefix(text_, prop and prop.get("text"), st.get("exchange")) + text_


def afterthought(text: str, st: dict):
    """A condition the user adds in a later turn to what was agreed ("one more thing: ...", "forgot to
    say, ..."): the agreed decision with the condition appended, or None."""
    settled = st.get("settled")
    m = AFTER_RE.match(_prose(text).strip())
    if not settled or not m:
        return None
    sents = [_tidy(x) for x in _sentences(m.group("body"))]
    sents = [x for x in sents if not x.endswith("?")]
    if not sents:
        return None
    cond = sents[0].rstrip(".")
    if len(cond.split()) < 3 or POSTPONE_RE.search(cond) or UNDECIDED_RE.search(cond) or NARRATION_RE.search(cond):
        return None
    return _with_condition(settled["text"], cond)


SENTENCE_END_RE = re.compile(r"(?<=[.!])\s+")
SEMICOLON_RE = re.compile(r";\s+")


def _parts(line: str) -> list:
    """Where a summing-up may start in a line: the line, each later sentence, and the rest of a sentence after
    each of its semicolons ("The earlier amendment (...) is replaced; the rule is now: X; Y")."""
    out = [line]
    for i, sentence in enumerate(SENTENCE_END_RE.split(line)):
        out += ([sentence] if i else []) + [sentence[m.end():] for m in SEMICOLON_RE.finditer(sentence)]
    return out


def summary_of(text: str, weak: bool = False, prose: str = None, dictated: bool = False):
    """The decision an assistant turn sums up ("So we agreed: ...", "Got it — rule: ..."), or None.
    `weak`: right after the user agreed, a plainer restatement counts too ("OK: ...", "Done: `x()` now ...");
    `dictated`: right after the user stated what to do, the assistant's "Got it: <restatement>" counts; and
    when what the user stated sets a value (SETS_VALUES: "ok pool with 8 slots, put every snowflake task in
    it"), the report of it done ("Done: - New Airflow pool `snowflake` with 8 slots ...") counts too.
    `prose`: _prose(text), when the caller has it."""
    prose = _prose(text) if prose is None else prose
    lines = prose.split("\n")
    fallback = None  # a plain restatement ("OK: ...", "Done: ..."): only when the turn sums up in no other way
    for i, line in enumerate(lines):
        for part in _parts(line):
            m = SUMMARY_RE.match(part)
            done = None
            if not m or not SUMMARY_LEAD_OK.search(part[:m.start("body")]):
                m = RECAP_RE.match(part)
                if not m or not (weak or m.group("strong")):
                    done = DONE_RECAP_RE.match(part) if (weak or dictated) and i == 0 and part is line else None
                    if not done or not weak and not (done.group("heard") and done.group("sep") in ":—–"
                                                     or dictated == SETS_VALUES and not done.group("heard")):
                        continue
                    m = done
            body = m.group("body").strip()
            if done and body and len(body.split()) < 4 and i + 1 < len(lines) and BULLET_RE.match(lines[i + 1]):
                body = body.rstrip(".!") + ":"  # "Done: alerting reworked." and the list of what it does now
            if done and body and not body.endswith(":"):
                # "Done: `schedule_reminders()` queues one SMS 2 days before ... . Tests pass.": the first two
                # sentences say how the code behaves now; a report of the work alone ("Done. All tests pass and
                # the PR is open") says nothing of the kind
                body = " ".join(SENTENCE_END_RE.split(body)[:2])
                if not (subjects(body) or NOW_STATES_RE.search(body) or done.group("heard")):
                    continue
                if STATUS_ONLY_RE.match(_tidy(body)) or WILL_DO_RE.match(_tidy(body)) or GERUND_RE.match(_tidy(body)):
                    continue
            if not body or body.endswith(":"):
                items = []
                for nxt in lines[i + 1:i + 7]:
                    b = BULLET_RE.match(nxt)
                    if b:
                        if not NOT_DOING_RE.match(_tidy(b.group(1))):
                            items.append(_tidy(b.group(1)).rstrip(".;"))
                    elif items or nxt.strip():
                        break
                body = (body.rstrip(":") + ": " if body.rstrip(":") else "") + "; ".join(items)
            body = _tidy(body)
            if body.endswith("?") or len(body.split()) < 4 or NARRATION_RE.search(body):
                continue
            if REPLACES_EARLIER_RE.search(prose) and not REPLACES_EARLIER_RE.search(body):
                # "This replaces the earlier rule (...). New rule: X": X keeps the words that say so
                said = cap_first(body.rstrip(".") + REPLACED_MARK)
            else:
                said = cap_first(body.rstrip(".") + ".")
            if not done:
                return said
            fallback = fallback or said
    # a rule restated as replacing the earlier one, the way an amendment is confirmed: "Replacing the old
    # rule with the new one: X", or "X. That supersedes what we settled on before, ..." (X is the new rule);
    # the record keeps the replacing words, so the earlier rule on the subject is retired
    parts = [p for p in SENTENCE_END_RE.split(" ".join(prose.split())) if p]
    for i, part in enumerate(parts):
        m = REPLACING_RE.match(part)
        if m and len(m.group("body").split()) >= 4 and not NARRATION_RE.search(m.group("body")):
            return cap_first(_tidy(m.group("body")).rstrip(".") + " (this replaces the earlier rule).")
        if i and SUPERSEDES_RE.match(part):
            body = _tidy(parts[i - 1])
            if len(body.split()) >= 4 and not body.endswith("?") and not NARRATION_RE.search(body):
                return cap_first(body.rstrip(".") + " (this supersedes the earlier rule).")
        m = FROM_NOW_RE.match(part)
        if i and m and REPLACES_EARLIER_RE.search(" ".join(parts[:i])):
            body = _tidy(m.group("body"))
            if len(body.split()) >= 4 and not body.endswith("?") and not NARRATION_RE.search(body):
                return cap_first(body.rstrip(".") + REPLACED_MARK)
    return fallback


def step(kind: str, text: str, st: dict, key_base: str):
    """One USER or ASSISTANT entry.  Returns ([(type, text, confidence, kind, key)], st).  `kind` of each
    result: accepted | summed | rule | rejected; `key` is set for an accepted decision, whose text the
    assistant's summing-up in its next turn replaces (the same record, not a second one)."""
    out = []
    for old in ("recent", "topic"):  # the names of every turn, kept before the exchange was
        st.pop(old, None)
    settled = st.get("settled")
    if settled:
        settled["age"] = settled.get("age", 0) + (kind == "user")
        if settled["age"] > AFTER_TURNS:
            st["settled"] = settled = None
    if kind == "user":
        st["accepted"] = None
        report, st["report"] = st.get("report"), None
        restated = _approved_report(text, report, st) if report else None
        if restated:
            out.append(restated)
        # the exchange: the names said since the user turn that a proposal answers, or since the last one
        answers = bool(st.get("proposal"))
        st["exchange"] = _mention(st.get("exchange"), text, "user")
        after = afterthought(text, st) if settled else None
        if after:
            # the same record as the agreement, now with the condition
            out.append(("decision", after, settled["conf"], "accepted", settled["key"]))
            settled.update(text=after)
            st["accepted"] = {"key": settled["key"], "text": after}
            st["proposal"] = st["alternative"] = None
            st["exchange"], st["on_rule"] = _mention([], text, "user"), True
            return out, st
        found = user_turn(text, st)
        side = bool(SIDE_REPLY_RE.match(_prose(text).strip()))
        off = switch_request(_tidy(_prose(text)))
        if off[0]:
            st["moving_off"] = {"old": off[0], "new": off[1]}
        elif not side:
            st["moving_off"] = None
        if st.get("moving_off"):
            found = [(f[0], _moving_off(f[1], st), f[2], f[3]) if f[0] == "decision" and f[3] == "accepted" else f
                     for f in found]
        if found and found[-1][0] == AGREED:
            key = "decision:%s" % key_base
            st["accepted"] = {"key": key, "text": ""}
            st["settled"] = {"key": key, "text": "", "conf": ACCEPTED, "age": 0}
            found = found[:-1]
        for i, (rtype, t, conf, k) in enumerate(found):
            # the last decision of the turn is what the assistant's summing-up restates: the same record
            last = rtype == "decision" and not any(f[0] == "decision" for f in found[i + 1:])
            key = "decision:%s" % key_base if last else None
            out.append((rtype, t, conf, k, key))
            if last:
                st["accepted"] = {"key": key, "text": t}
                st["settled"] = {"key": key, "text": t, "conf": conf, "age": 0}
                remember(st, key, t)
        change = None if any(f[0] == "decision" for f in found) else change_request(text)
        waiting = st.get("change")
        if waiting and not found and side:
            pass  # "yes, how long you stay signed in. keep it sliding": an answer to the assistant, not a new request
        elif change:
            st["change"] = dict(change, turns=0)
        else:
            st["change"] = None
        # (a change still waits for its confirmation across the user's short reply or side question in
        # between: "fine. and the refunds we already missed since may?" ... "yes" ... "Done: ... now 7 days")
        ch = CHALLENGE_RE.match(_tidy(_prose(text)))
        pending = st.get("proposal")
        if not pending and not found and not ch:
            # "... they need something they can file. can't we just show the first 8 chars of the uuid?": the
            # turn's last sentence suggests X before anything is proposed
            last = [x for x in LOOSE_SENT_RE.split(_prose(text)) if x and x.strip()][-1:]
            ch = CHALLENGE_RE.match(_tidy(last[0])) if last else None
            st["proposal"] = None
            st["alternative"] = {"text": ch.group("alt"), "by": "user", "reason": None} if ch else None
        elif pending and not found and ch:
            # "why not just X?" about the pending proposal: still pending, X is the alternative
            st["alternative"] = {"text": ch.group("alt"), "by": "user", "reason": None}
        elif pending and not found and not pending.get("asked") and asks_about(text, pending):
            # "is 10 min enough for the card payment?": the assistant answers, and the user's "ok go with 10"
            # after that still settles the proposal (one question: a second turn that does not agree ends it)
            st["proposal"] = dict(pending, asked=True)
        else:
            st["proposal"] = st["alternative"] = None
        if not answers:
            st["exchange"] = _mention([], text, "user")
        st["on_rule"] = bool(st.get("accepted"))
        held = (st.get("dictated") == SETS_VALUES and int(st.get("dictated_turns") or 0) < DICTATED_TURNS
                and not any(f[0] == "decision" for f in found))
        dictation = None
        if not any(f[0] == "decision" for f in found) and not st.get("proposal") and dictates(text):
            # "so: deposit is forfeited if the client cancels less than 24 hours before"
            # a value set in answer to what the assistant said ("ok pool with 8 slots ..." after its analysis),
            # not a task the session opens with ("Set the cache TTL of `load_catalog()` to 60 seconds"; a
            # change to code no rule speaks of is kept only when it replaces one: change_request)
            dictation = SETS_VALUES if st.get("heard") and VALUE_RE.search(_prose(text)) else 1
        if dictation == SETS_VALUES or not held:
            st["dictated"], st["dictated_turns"] = dictation, 0
        # (a value set waits for its report across the user's other turns: "partitioning is nicer but not now.
        # batched delete" ... "it was stopped, started it now" ... "Done: - Raw driver location points are kept
        # for 90 days")
    else:
        acc = st.get("accepted") or (settled if settled and not settled.get("summed") else None)
        prose = _prose(text)
        dictated = st.get("dictated")
        st["heard"] = True  # the assistant has spoken in this session
        summ = summary_of(text, weak=bool(acc), prose=prose, dictated=dictated)
        # a plain statement is restated in the next turn or not at all; one that sets a value is reported done
        # once, in any turn before the user speaks again
        if summ or dictated != SETS_VALUES:
            st.pop("dictated", None)
            st.pop("dictated_turns", None)
        else:
            st["dictated_turns"] = int(st.get("dictated_turns") or 0) + 1
        if summ:
            if acc:
                t = summ
                cond = acc["text"].split(" — ", 1)[1] if " — " in acc["text"] else ""
                if cond and not _covered(cond, summ):
                    t = _with_condition(summ, cond)
                # its subject is the agreement's, else one the assistant named since the user last spoke
                # of the rule (a side request's file is not the rule's)
                t = _subject_prefix(t, acc["text"], _mention(st.get("exchange") if st.get("on_rule") else [],
                                                              text, "assistant")) + t
                t = _moving_off(t, st)
                out.append(("decision", t, ACCEPTED_SUMMED, "summed", acc["key"]))
                st["settled"] = {"key": acc["key"], "text": t, "conf": ACCEPTED_SUMMED, "age": 0, "summed": True}
                remember(st, acc["key"], t, summed=True)
            else:
                t = _moving_off(_subject_prefix(summ, _mention(st.get("exchange"), text, "assistant")) + summ, st)
                out.append(("decision", t, SUMMED, "summed", None))
            st["change"] = None
        st["report"] = None if summ or not st.get("rules") else summary_of(text, weak=True, prose=prose)
        change = st.get("change")
        if change:
            done = change_confirmed(prose, change)
            if not done and CHANGE_DONE_RE.match(prose) and len(change["text"].split()) >= 4:
                done = cap_first(change["text"])
            change["turns"] += 1
            if done:
                out.append(("decision", _as_change(done, change), CHANGED, "changed", None))
            if done or change["turns"] >= CHANGE_TURNS:
                st["change"] = None
        st["accepted"] = None
        tidied = [_tidy(x) for x in _sentences(prose)]
        prop = _proposal(prose, tidied)
        alt = next((m for m in (ALT_RE.search(x) for x in tidied if x[:2].lower() == "or" or mentions_any(x, ALT_WORDS))
                    if m), None)
        pending = st.get("alternative")
        if prop:
            st["proposal"], st["alternative"] = prop, None
            if pending and pending.get("by") == "user" and not pending.get("reason") and not alt:
                # the user's X argued against and something else proposed in one turn ("First 8 characters of a
                # UUID would be shorter but still random: ... Proposal: per-clinic sequential numbers"): a yes
                # to the proposal turns X down with that reason
                counter = COUNTER_RE.search(prose)
                if counter and mentions_any(_tidy(prose[:counter.start()]).lower(),
                                            _alt_words(pending["text"])[:3] or [""]):
                    st["alternative"] = dict(pending, reason=counter.group("reason"))
        elif (st.get("proposal") or {}).get("asked") and RETRACT_RE.search(prose):
            st["proposal"] = st["alternative"] = None  # "good point, let's not cache it": the answer takes it back
        if alt:
            # "the simpler alternative would be to X": the proposal stays pending, X is what a "no" turns down
            st["alternative"] = {"text": next(g for g in alt.groups() if g), "by": "assistant", "reason": None}
        elif pending and pending.get("by") == "user" and not pending.get("reason") and not prop:
            counter = COUNTER_RE.search(prose)
            if counter:
                pending["reason"] = counter.group("reason")
        st["exchange"] = _mention(st.get("exchange"), text, "proposal" if prop else "assistant")
    return out, st


SESSION_RULES = 6  # keyed decisions of a session that a later report may restate
REPORT_HOLDS = 0.6  # of a decision's index terms, what the report must hold to restate it
# the user approves the work reported ("good.", "nice work", "👍 thanks", "ship it")
APPROVAL_RE = re.compile(r"^\W*(?:good|great|nice|perfect|lgtm|looks\s+good|ship\s+it|merge\s+it|awesome|excellent|"
                         r"thanks|thx|ty|cool|👍)(?:\s+(?:work|job|stuff|one))?\b|^\W*👍", re.I)


def remember(st: dict, key: str, text: str, summed: bool = False):
    """Keep a keyed decision of the session for a later report to restate; one the assistant has already
    summed up ("Inventory changes buffered in memory per match; flushed ... at match end; ...") is kept
    as it is."""
    rules = [r for r in st.get("rules") or [] if r["key"] != key]
    st["rules"] = (rules + [{"key": key, "text": text, "summed": summed}])[-SESSION_RULES:]


def _approved_report(text: str, report: str, st: dict):
    """The decision the assistant's report of the work restates, as the report states it, when the user
    approves the report ("Done: - `plates.Normalize` ... - migration 015 adds `plate_country` and
    `plate_norm` ..." / "good."): a rule settled in pieces is often whole only there.  The report replaces
    the session's decision whose words it holds (REPORT_HOLDS of them, the best), never adds one."""
    prose = _prose(text).strip()
    if not APPROVAL_RE.match(prose) or DECLINE_RE.match(prose) or UNDECIDED_RE.search(prose) or "?" in prose:
        return None
    from cortex.store.terms import tokenize
    said = set(tokenize(report))
    best = None
    for rule in st.get("rules") or ():
        if rule.get("summed"):
            continue
        terms = set(tokenize(rule["text"]))
        held = len(terms & said) / len(terms) if terms else 0
        if held >= REPORT_HOLDS and (best is None or held > best[0]):
            best = (held, rule)
    if best is None or _covered(report, best[1]["text"]):
        return None
    remember(st, best[1]["key"], report, summed=True)
    return ("decision", report, ACCEPTED_SUMMED, "summed", best[1]["key"])


# the assistant's answer to a question about its proposal takes the proposal back
RETRACT_RE = re.compile(r"\b(?:you'?re\s+right|good\s+(?:point|catch)|fair\s+point|on\s+second\s+thought|scratch\s+that|"
                        r"let'?s\s+not|better\s+not|(?:forget|drop|skip)\s+(?:that|the\s+idea|my\s+(?:suggestion|"
                        r"proposal))|not\s+worth\s+it|(?:that|it)\s+(?:would|wouldn'?t)\s+(?:not\s+)?work)\b", re.I)
# a question that points back at what was proposed ("is that overkill?", "does it handle retries?")
POINTS_BACK_RE = re.compile(r"\b(?:that|this|it|those|these|them)\b", re.I)


DICTATED_TURNS = 8  # assistant turns a value the user set waits for the report of it done
SETS_VALUES = 2  # st["dictated"]: the user's statement sets a value (a number, always/never/only/every ...)
VALUE_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])|\b(?:always|never|only|except|every|all|none|max|min|"
                      r"maximum|minimum|at\s+most|at\s+least|no\s+more\s+than|per)\b", re.I)


def dictates(text: str) -> bool:
    """Whether a user's turn states something to do or to hold (no question, nothing put off or left open):
    the assistant's "Got it: <restatement>" after it is then the rule the user set."""
    prose = _prose(text).strip()
    # what is put off after the rule is another matter ("12 hours idle, no remember me. PIN switch maybe
    # later"); a value set "for now" is no rule ("run it with Harbourside for now, hours mon-fri 8-19")
    sents = [x for x in LOOSE_SENT_RE.split(prose) if x and x.strip()]
    first = sents[0] if sents else ""
    if any(VALUE_RE.search(x) and (POSTPONE_RE.search(x) or UNDECIDED_RE.search(x)) for x in sents):
        return False
    return bool(prose) and "?" not in prose and len(prose.split()) >= 5 and not (
        UNDECIDED_RE.search(first) or POSTPONE_RE.search(first) or HYPOTHETICAL_RE.match(prose))


def asks_about(text: str, proposal: dict) -> bool:
    """Whether a user's turn asks a question about the pending proposal: it asks, neither declines nor puts
    it off, and points back at it or shares a word with it ("5 min enough with their retries?" after "reject
    anything more than 5 minutes old")."""
    prose = _prose(text).strip()
    if not _asks(prose) or DECLINE_RE.match(prose) or UNDECIDED_RE.search(prose):
        return False  # (a question that puts it off, "can we do that later?", still needs a yes after it)
    if POINTS_BACK_RE.search(prose):
        return True
    from cortex.store.terms import tokenize
    said = " ".join([proposal.get("text") or ""] + list((proposal.get("options") or {}).values())
                    + [lead["text"] for lead in (proposal.get("leads") or {}).values()])
    return bool(set(tokenize(prose)) & set(tokenize(said)))


# an option's downside, as the turn states it under the option
DOWNSIDE_RE = re.compile(r"(?:^|[.;]\s+|\s[-–—]\s|,\s+)(?:but|however|downside:?|the\s+(?:catch|problem|downside)\s+is"
                         r"(?:\s+that)?|except\s+that)\s*,?\s+(?P<reason>[^.!?]{10,})", re.I)


def _alt_of(option: str) -> str:
    """An option's text as the thing turned down: its first clause, its lead word lower-cased."""
    first = re.split(r"(?<=[.;])\s+|\s+\(", option.strip(), maxsplit=1)[0].rstrip(".;: ")
    return first[:1].lower() + first[1:] if first[:2] != first[:2].upper() else first


def _alt_words(alt: str) -> list:
    """The words of an alternative the assistant's counter-argument would repeat: its longest first."""
    return sorted((w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]{3,}", alt or "")), key=lambda w: -len(w))


def _covered(cond: str, summ: str) -> bool:
    from cortex.store.terms import tokenize
    a, b = set(tokenize(cond)), set(tokenize(summ))
    return not a or len(a & b) >= max(1, len(a) // 2)
