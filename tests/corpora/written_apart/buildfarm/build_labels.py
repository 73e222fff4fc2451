"""Write labels.json for the Forge corpus and check it against chats.json (standard library only).

Checks:
- every rule word and rejected word is said (case-insensitive substring) in the user or assistant
  text of the decision's chat; stale words are said in the amending chat;
- the 5th question of each decision holds none of its rule words (nor stale words);
- an amendment comes from a later chat than the decision it amends, and amends an original rule;
- every chat is classified exactly once (rule chat, amendment chat, undecided, unrelated);
- counts: 36 chats, 12 rules, 7 amendments, 3 undecided, 14 unrelated; day never increases.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def D(id, chat, subject, rule_words, questions, rejected=(), amends=None, stale_words=()):
    return {
        "id": id,
        "chat": chat,
        "subject": subject,
        "rule_words": list(rule_words),
        "stale_words": list(stale_words),
        "amends": amends,
        "rejected": [{"words": list(w)} for w in rejected],
        "questions": list(questions),
    }


DECISIONS = [
    D("d01", "c03", "type and format of job ids (jobs.id, URLs, pod labels)",
      ["UUIDv7", "NewV7"],
      ["What type are job ids in the jobs table?",
       "Can I mint a job id with uuid.New()?",
       "Why are job URLs in the dashboard not numeric like /jobs/48213?",
       "Should a new table that references jobs use a bigint foreign key?",
       "After someone's refactor, new jobs no longer sort in creation order by id and inserts into the jobs table got slower. What changed?"],
      rejected=[["bigserial"], ["ULID"]]),
    D("d02", "c05", "how .forge/pipeline.yaml is parsed and what happens to unknown keys",
      ["yaml.v3", "KnownFields(true)"],
      ["Which YAML library parses the pipeline spec?",
       "What happens if a pipeline.yaml contains a key Forge doesn't know?",
       "Are unknown keys in pipeline files warnings or errors?",
       "Can teams put their own top-level keys in pipeline.yaml to hold anchors?",
       "A team pushed a pipeline with `artefacts:` in it and now every build of theirs fails at parse time with a line number. Is the farm broken?"],
      rejected=[["UnmarshalStrict"], ["warn-only"]]),
    D("d03", "c07", "default and maximum job timeout",
      ["60 minutes", "6 hours"],
      ["What timeout does a job get when the pipeline doesn't set one?",
       "What's the longest timeout a job can ask for?",
       "How is a job timeout enforced on the pod?",
       "Can the ML team set timeout: 8h on a training job?",
       "Our integration job that hung waiting for a database got killed after an hour, but there's no timeout anywhere in our pipeline. Who killed it?"],
      rejected=[["2 hours"], ["12 hours"]]),
    D("d04", "c08", "hash function for build cache keys and content-addressed digests",
      ["BLAKE3", "zeebo/blake3"],
      ["Which hash function do we use for cache keys?",
       "Why not use xxhash for the cache keys, it's faster?",
       "What does the object key of a cache blob look like?",
       "Which Go package computes the cache digests?",
       "After a deploy every build was a cache miss for a day, and there's a new folder under cas/ in the bucket. What happened?"],
      rejected=[["xxhash"], ["sha256"]]),
    D("d05", "c10", "which job failures the farm retries automatically, how many times and with what backoff",
      ["infrastructure failures", "at most 2"],
      ["Does Forge retry failed jobs automatically?",
       "How many times is an evicted job retried?",
       "Are failing tests re-run by the farm?",
       "What's the backoff between automatic retries?",
       "One job was OOM-killed and just went red, while another that got drained during node patching re-ran by itself on a different node. Why the difference?"],
      rejected=[["retry everything 3 times"], ["retry test failures once"]]),
    D("d06", "c12", "how long build artifacts are kept and what deletes them",
      ["30 days", "365 days"],
      ["How long are artifacts of PR builds kept?",
       "How long do we keep artifacts built from release tags?",
       "What deletes old artifacts, is there a job in the controller?",
       "What's the key layout in the artifacts bucket?",
       "QA tried to download a feature-branch build from six weeks ago and got a 404, but last spring's v2.3 release build still downloads fine. Bug?"],
      rejected=[["cron in the controller"], ["object tags"]]),
    D("d07", "c14", "how secrets are delivered to jobs",
      ["/run/forge/secrets", "tmpfs"],
      ["How does a job get a secret like an npm token?",
       "Are secrets exposed to jobs as environment variables?",
       "Where does a secret live inside the job pod?",
       "Can a job read another team's secrets?",
       "My publish step does `echo $NPM_TOKEN` and gets an empty string, even though NPM_TOKEN is listed under secrets:. Is injection broken?"],
      rejected=[["Kubernetes Secret"], ["env vars"]]),
    D("d08", "c16", "queue priority: lanes and ordering between teams",
      ["strict priority between lanes", "weighted fair share"],
      ["How does the scheduler decide which queued job runs next?",
       "Can I give a job a numeric priority?",
       "Which lane does a tag build go to?",
       "What do the team weights in teams.yaml do?",
       "ML's nightly training sat queued all afternoon while PR builds from every team kept starting. Is the scheduler stuck?"],
      rejected=[["0-100"], ["pure fair share"]]),
    D("d09", "c17", "per-team limit on concurrently running jobs",
      ["40 concurrent jobs", "max_concurrent_jobs"],
      ["How many jobs can one team run at the same time?",
       "How do we raise the concurrency limit for one team?",
       "Are there per-user limits on running jobs?",
       "What does 'waiting: team at its limit' mean on the dashboard?",
       "Our merge train kicked off 80 jobs but only half of them started; the rest sat queued although the farm had free runners. Why?"],
      rejected=[["25 concurrent"], ["per-user"]]),
    D("d10", "c19", "how macOS jobs are isolated on the bare-metal mac hosts",
      ["tart clone", "2 VMs per host"],
      ["How do macOS jobs run on the mac minis?",
       "How many macOS jobs can run in parallel on one host?",
       "Why don't we use Anka for the macs?",
       "Where does the macOS golden image come from?",
       "A third iOS job never begins on mac-04 even though the host has plenty of free CPU and RAM. Why is it waiting?"],
      rejected=[["Anka"], ["cleanup script"]]),
    D("d11", "c20", "who may queue jobs into the release lane and cancel or move other people's jobs",
      ["team owners", "platform on-call"],
      ["Who may manually run a job in the release lane?",
       "Can I cancel a job that someone else on my team started?",
       "Where are the owners of a team defined?",
       "Do we use Okta groups for Forge permissions?",
       "I clicked 'run as hotfix' on our pipeline and got a 403, but my teammate Lea can do it. What's different about her account?"],
      rejected=[["any team member"], ["okta group"]]),
    D("d12", "c23", "which builds may write to the shared build cache (FORGE-SEC-14)",
      ["read-only", "protected branches"],
      ["Can PR builds write to the build cache?",
       "How do we prevent cache poisoning from forks?",
       "Which cache credentials does a PR build get?",
       "What happens if the branch protection lookup fails?",
       "Every push to my PR rebuilds everything from scratch, even what the previous push of the same PR already built. Is the cache broken?"],
      rejected=[["per-PR"], ["signing"]]),
    # amendments
    D("d13", "c21", "default job timeout (the 'default kill timer', DefaultJobTimeout)",
      ["30 minutes"],
      ["What's the default job timeout now?",
       "Did the default timeout for jobs change?",
       "Is the maximum job timeout still 6 hours?",
       "Do jobs that were already queued get the new default timeout?",
       "Our package-win64 job started failing after half an hour with a deadline error, nothing in the build changed. Why?"],
      amends="d03", stale_words=["60 minutes"]),
    D("d14", "c24", "how long branch and PR artifacts are kept",
      ["10 days"],
      ["How long are branch artifacts kept now?",
       "Did artifact retention change for PR builds?",
       "Are release-tag artifacts still kept for a year?",
       "How do I keep a build's artifacts longer than the default?",
       "QA's bisect script can't fetch main builds from two weeks ago anymore, the downloads return 404. Did something get deleted?"],
      amends="d06", stale_words=["30 days"]),
    D("d15", "c26", "YAML library for the pipeline spec parser (still strict)",
      ["goccy/go-yaml", "DisallowUnknownField"],
      ["Which YAML library parses pipeline.yaml now?",
       "Can I import gopkg.in/yaml.v3 in a new package?",
       "Why did we move off the old YAML parser?",
       "How does the parser reject unknown keys now?",
       "Pipeline errors suddenly print a snippet of the file with a caret under the bad key instead of the old one-line message. Was that on purpose?"],
      amends="d02", stale_words=["yaml.v3"],
      rejected=[["go.yaml.in/yaml/v3"]]),
    D("d16", "c27", "cache digest function (REAPI / Bazel remote cache)",
      ["sha256", "cas/sha256/"],
      ["Which hash does the build cache use now?",
       "Can Bazel use the Forge cache as its remote cache?",
       "Why did we move away from BLAKE3 for the cache?",
       "Do laptops get write access to the Bazel remote cache?",
       "Bazel on my laptop gets remote cache hits but never uploads anything, and there's a second prefix next to the old one in the cache bucket. Is my setup broken?"],
      amends="d04", stale_words=["blake3"],
      rejected=[["two key spaces"]]),
    D("d17", "c28", "per-team limit: counted in requested vCPU instead of jobs",
      ["192 vCPU", "max_vcpu"],
      ["What's the per-team limit on running work now?",
       "How do I raise my team's vCPU limit?",
       "Is max_concurrent_jobs still supported in teams.yaml?",
       "What happens if one job asks for more CPU than its team's limit?",
       "ML can now run its six 32-core training shards at once but a seventh waits, while web-platform runs 60 small jobs without waiting. Why?"],
      amends="d09", stale_words=["40 concurrent"],
      rejected=[["160 vCPU"], ["two knobs"]]),
    D("d18", "c31", "opt-in retry of failing tests per job",
      ["on_test_failure", "passed on retry"],
      ["Can a job retry a failing test automatically?",
       "How do we enable a retry for flaky UI tests?",
       "Does a test retry use up the infrastructure retries?",
       "Can we turn on test retries for a whole team?",
       "Our UI test job shows a yellow badge instead of a green one even though the last run passed. What does that mean?"],
      amends="d05", stale_words=["infrastructure failures only"],
      rejected=[["per team"]]),
    D("d19", "c34", "PR builds' cache writes (PR-scoped namespace)",
      ["PR-scoped", "3 days"],
      ["Can PR builds write to the cache now?",
       "Where do PR builds store their cache entries?",
       "How long does a PR's cache live?",
       "Can a main build ever read what a PR build wrote to the cache?",
       "My PR sat idle over a long weekend and the next push rebuilt things the previous push had already cached. Expected?"],
      amends="d12", stale_words=["read-only"],
      rejected=[["7 days"]]),
]

UNDECIDED = ["c11", "c22", "c32"]
UNDECIDED_QUESTIONS = [
    {"chat": "c11", "question": "Did we pick a backend for searching build logs across jobs?"},
    {"chat": "c11", "question": "Are build logs moving to Loki or ClickHouse?"},
    {"chat": "c22", "question": "How will Forge schedule jobs onto a second cluster in FRA?"},
    {"chat": "c22", "question": "Did we choose between one controller for all clusters and one controller per cluster?"},
    {"chat": "c32", "question": "Do we have Windows runners, and which approach did we go with?"},
    {"chat": "c32", "question": "Will Windows builds run in containers or in VMs?"},
]
UNRELATED = ["c01", "c02", "c04", "c06", "c09", "c13", "c15", "c18", "c25", "c29", "c30", "c33", "c35", "c36"]


def said(chat):
    return "\n".join(t.get("user", "") + "\n" + t.get("assistant", "") for t in chat["turns"]).lower()


def check(chats, labels):
    errors = []
    by_id = {c["id"]: c for c in chats}
    decs = {d["id"]: d for d in labels["decisions"]}
    prev = None
    for c in chats:
        if prev is not None and c["day"] > prev:
            errors.append("%s: day increases" % c["id"])
        prev = c["day"]
    originals = [d for d in labels["decisions"] if d["amends"] is None]
    amendments = [d for d in labels["decisions"] if d["amends"] is not None]
    if (len(chats), len(originals), len(amendments), len(labels["undecided"]), len(labels["unrelated"])) != (36, 12, 7, 3, 14):
        errors.append("counts off: %d chats, %d rules, %d amendments, %d undecided, %d unrelated" % (
            len(chats), len(originals), len(amendments), len(labels["undecided"]), len(labels["unrelated"])))
    seen = {}
    for cid in [d["chat"] for d in labels["decisions"]] + labels["undecided"] + labels["unrelated"]:
        seen[cid] = seen.get(cid, 0) + 1
    for cid in by_id:
        if seen.get(cid, 0) != 1:
            errors.append("%s classified %d times" % (cid, seen.get(cid, 0)))
    for cid in seen:
        if cid not in by_id:
            errors.append("unknown chat %s" % cid)
    for q in labels["undecided_questions"]:
        if q["chat"] not in labels["undecided"]:
            errors.append("undecided question for non-undecided chat %s" % q["chat"])
    for d in labels["decisions"]:
        text = said(by_id[d["chat"]])
        if not d["rule_words"]:
            errors.append("%s: no rule words" % d["id"])
        for w in d["rule_words"]:
            if w.lower() not in text:
                errors.append("%s: rule word %r not said in %s" % (d["id"], w, d["chat"]))
        for r in d["rejected"]:
            for w in r["words"]:
                if w.lower() not in text:
                    errors.append("%s: rejected word %r not said in %s" % (d["id"], w, d["chat"]))
        if len(d["questions"]) != 5:
            errors.append("%s: %d questions" % (d["id"], len(d["questions"])))
        else:
            q5 = d["questions"][4].lower()
            for w in d["rule_words"] + d["stale_words"]:
                if w.lower() in q5:
                    errors.append("%s: 5th question holds %r" % (d["id"], w))
        if d["amends"] is None:
            if d["stale_words"]:
                errors.append("%s: stale words on an original rule" % d["id"])
        else:
            old = decs.get(d["amends"])
            if old is None or old["amends"] is not None:
                errors.append("%s amends %s, which is not an original rule" % (d["id"], d["amends"]))
                continue
            if by_id[d["chat"]]["day"] >= by_id[old["chat"]]["day"] or d["chat"] <= old["chat"]:
                errors.append("%s (%s) does not come after %s (%s)" % (d["id"], d["chat"], old["id"], old["chat"]))
            if not d["stale_words"]:
                errors.append("%s: amendment without stale words" % d["id"])
            for w in d["stale_words"]:
                if w.lower() not in text:
                    errors.append("%s: stale word %r not said in %s" % (d["id"], w, d["chat"]))
    amended = [d["amends"] for d in amendments]
    if len(set(amended)) != len(amended):
        errors.append("a rule is amended twice")
    # soft check: words the brief asks us not to overuse
    for word in ("decision", "decided"):
        n = sum(said(c).count(word) for c in chats)
        if n > 6:
            errors.append("%r used %d times in chat text" % (word, n))
    return errors


def main():
    with open(os.path.join(HERE, "chats.json"), encoding="utf-8") as f:
        chats = json.load(f)
    labels = {
        "project": "Forge: Fernhill's internal CI build farm (Go control plane, Kubernetes + macOS runners, S3-compatible cache)",
        "decisions": DECISIONS,
        "undecided": UNDECIDED,
        "undecided_questions": UNDECIDED_QUESTIONS,
        "unrelated": UNRELATED,
    }
    errors = check(chats, labels)
    if errors:
        for e in errors:
            print("ERROR:", e)
        sys.exit(1)
    with open(os.path.join(HERE, "labels.json"), "w", encoding="utf-8") as f:
        json.dump(labels, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote labels.json: %d decisions (%d amendments), %d undecided, %d unrelated; all checks pass" % (
        len(DECISIONS), sum(1 for d in DECISIONS if d["amends"]), len(UNDECIDED), len(UNRELATED)))


if __name__ == "__main__":
    main()
