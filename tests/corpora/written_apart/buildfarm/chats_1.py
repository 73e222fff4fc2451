from h import U, A, B, R, E, W, G, chat

# c01 (day 90) unrelated: local kind cluster, controller can't reach MinIO, presigned URL host mismatch
chat("c01", 90, [
    U("hey. first day on forge for real. `make kind-up` finishes but the controller pod is crashlooping, something about minio"),
    B("cd {P} && kubectl -n forge-system get pods && kubectl -n forge-system logs deploy/forge-controller --tail=15",
      "Check controller pod status and logs",
      "NAME                               READY   STATUS             RESTARTS      AGE\n"
      "forge-controller-7d9c6b8f54-qx2lm  0/1     CrashLoopBackOff   5 (31s ago)   4m12s\n"
      "postgres-0                         1/1     Running            0             4m40s\n"
      "{\"time\":\"2024-03-04T09:12:44Z\",\"level\":\"INFO\",\"msg\":\"forge-controller starting\",\"version\":\"dev-3f1c2aa\"}\n"
      "{\"time\":\"2024-03-04T09:12:44Z\",\"level\":\"INFO\",\"msg\":\"connected to postgres\",\"dsn_host\":\"postgres.forge-system.svc\"}\n"
      "{\"time\":\"2024-03-04T09:12:49Z\",\"level\":\"ERROR\",\"msg\":\"cache store init failed\",\"err\":\"operation error S3: HeadBucket, exceeded maximum number of attempts, 3, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Head \\\"http://minio:9000/forge-cache\\\": dial tcp: lookup minio on 10.96.0.10:53: no such host\"}\n"
      "{\"time\":\"2024-03-04T09:12:49Z\",\"level\":\"ERROR\",\"msg\":\"fatal\",\"err\":\"cache: init: bucket check failed\"}",
      error=False),
    A("The controller can't resolve `minio`. A bare service name only resolves inside the same namespace, and the controller runs in `forge-system`. Let me check where the kind setup puts MinIO."),
    B("cd {P} && kubectl get svc -A | grep -i minio", "Find the MinIO service",
      "forge-dev      minio           ClusterIP   10.96.141.22   <none>        9000/TCP,9001/TCP   4m51s"),
    R("deploy/kind/values-dev.yaml",
      "controller:\n  image: forge-controller:dev\n  logLevel: debug\n  postgres:\n    dsn: postgres://forge:forge@postgres.forge-system.svc:5432/forge?sslmode=disable\n  cache:\n    endpoint: http://minio:9000\n    bucket: forge-cache\n    region: us-east-1\n    forcePathStyle: true\n  artifacts:\n    endpoint: http://minio:9000\n    bucket: forge-artifacts\nminio:\n  namespace: forge-dev\n"),
    A("That's it: MinIO lives in `forge-dev`, the values file points at `http://minio:9000`. Two ways out: move MinIO into `forge-system`, or use the full service name. The FQDN is the smaller change and matches how the Postgres DSN is already written."),
    E("deploy/kind/values-dev.yaml",
      "  cache:\n    endpoint: http://minio:9000",
      "  cache:\n    endpoint: http://minio.forge-dev.svc.cluster.local:9000"),
    E("deploy/kind/values-dev.yaml",
      "  artifacts:\n    endpoint: http://minio:9000",
      "  artifacts:\n    endpoint: http://minio.forge-dev.svc.cluster.local:9000"),
    B("cd {P} && make kind-deploy && kubectl -n forge-system rollout status deploy/forge-controller --timeout=90s",
      "Redeploy controller to kind",
      "helm upgrade --install forge deploy/helm/forge -n forge-system -f deploy/kind/values-dev.yaml\nRelease \"forge\" has been upgraded. Happy Helming!\nNAME: forge\nLAST DEPLOYED: Mon Mar  4 09:16:02 2024\nNAMESPACE: forge-system\nSTATUS: deployed\nREVISION: 3\nWaiting for deployment \"forge-controller\" rollout to finish: 0 of 1 updated replicas are available...\ndeployment \"forge-controller\" successfully rolled out"),
    U("ok controller is up. but now a test job fails at the upload step, agent says SignatureDoesNotMatch"),
    B("cd {P} && kubectl -n forge-jobs logs -l forge.fernhill.dev/job --tail=8 -c agent",
      "Agent logs from the test job pod",
      "level=INFO msg=\"step finished\" step=build exit=0 dur=11.2s\n"
      "level=INFO msg=\"uploading artifact\" name=dist.tar.gz size=1843221\n"
      "level=ERROR msg=\"artifact upload failed\" err=\"PUT http://localhost:9000/forge-artifacts/job/018e0a.../dist.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&...: dial tcp 127.0.0.1:9000: connect: connection refused\"\n"
      "level=ERROR msg=\"job failed\" reason=agent_error"),
    A("That's a different error from the one you mentioned: the presigned URL points at `localhost:9000`. I guess you saw SignatureDoesNotMatch after trying to patch the host by hand? Presigned S3 URLs sign the host, so rewriting it afterwards breaks the signature.\n\nThe controller presigns with a separate `publicEndpoint` when it's set. Let me look."),
    G("PublicEndpoint", "internal/artifacts",
      "internal/artifacts/store.go:41:\tPublicEndpoint string `yaml:\"publicEndpoint\"`\n"
      "internal/artifacts/store.go:77:\tif c.PublicEndpoint != \"\" {\n"
      "internal/artifacts/store.go:78:\t\tpresignEndpoint = c.PublicEndpoint"),
    G("publicEndpoint", "deploy/kind",
      "deploy/kind/values-local-minio.yaml:9:    publicEndpoint: http://localhost:9000"),
    A("`deploy/kind/values-local-minio.yaml` sets `publicEndpoint: http://localhost:9000`. It's meant for running the agent on your laptop against a port-forwarded MinIO, and `make kind-up` layers it on top. Inside the cluster the agent needs the in-cluster name. I'll drop it from the kind-up target and keep the file for the laptop case."),
    R("Makefile",
      "kind-up: kind-create kind-load kind-deploy\n\nkind-deploy:\n\thelm upgrade --install forge deploy/helm/forge -n forge-system \\\n\t\t-f deploy/kind/values-dev.yaml \\\n\t\t-f deploy/kind/values-local-minio.yaml\n\nagent-local:\n\tgo run ./cmd/forge-agent --config deploy/kind/agent-local.yaml\n"),
    E("Makefile",
      "\t\t-f deploy/kind/values-dev.yaml \\\n\t\t-f deploy/kind/values-local-minio.yaml\n",
      "\t\t-f deploy/kind/values-dev.yaml $(if $(LOCAL_AGENT),-f deploy/kind/values-local-minio.yaml)\n"),
    B("cd {P} && make kind-deploy >/dev/null && go run ./cmd/forgectl run --repo examples/hello --wait",
      "Redeploy and run the hello example job",
      "queued job 018e0a4c-9b1e-7c3a-8d55-0f6f1b2e9a10 (lane=default team=platform)\nrunning  build   [11.0s]\nrunning  upload  [0.4s]\nsucceeded in 14.9s\nartifacts: dist.tar.gz (1.8 MB)"),
    A("Hello job goes through end to end now. Summary:\n- `values-dev.yaml`: cache and artifact endpoints use `minio.forge-dev.svc.cluster.local`.\n- `Makefile`: `values-local-minio.yaml` is only added when you run with `LOCAL_AGENT=1` (for `make agent-local`)."),
    U("nice, works. thanks"),
])

# c02 (day 88) unrelated: buf breaking after LogChunk fields were renumbered
chat("c02", 88, [
    U("CI on my branch is red on `buf breaking`, but all i did was add a field to LogChunk?? tobi"),
    B("cd {P} && buf breaking proto --against '.git#branch=main,subdir=proto'",
      "Run buf breaking against main",
      "proto/forge/logs/v1/logs.proto:31:3:Field \"3\" with name \"stream\" on message \"LogChunk\" changed type from \"enum\" to \"int64\".\n"
      "proto/forge/logs/v1/logs.proto:32:3:Field \"4\" with name \"offset\" on message \"LogChunk\" changed name from \"stream\" to \"offset\".\n"
      "proto/forge/logs/v1/logs.proto:33:3:Field \"5\" with name \"stream\" on message \"LogChunk\" was added, but field \"4\" was previously \"stream\".",
      error=True),
    R("proto/forge/logs/v1/logs.proto",
      "syntax = \"proto3\";\n\npackage forge.logs.v1;\n\noption go_package = \"git.fernhill.dev/platform/forge/gen/forge/logs/v1;logsv1\";\n\nimport \"google/protobuf/timestamp.proto\";\n\nservice LogService {\n  // Agent -> controller.\n  rpc Push(stream PushRequest) returns (PushResponse);\n  // Dashboard / forgectl -> controller. Follows until the step ends.\n  rpc Tail(TailRequest) returns (stream LogChunk);\n}\n\nenum Stream {\n  STREAM_UNSPECIFIED = 0;\n  STREAM_STDOUT = 1;\n  STREAM_STDERR = 2;\n}\n\n// LogChunk is a batch of lines from one step.\nmessage LogChunk {\n  string job_id = 1;\n  string step = 2;\n  // byte offset of data[0] within the step log\n  int64 offset = 3;\n  Stream stream = 4;\n  bytes data = 5;\n  google.protobuf.Timestamp emitted_at = 6;\n}\n"),
    A("The diff isn't just an added field. `offset` was inserted at number 3 and everything after it was shifted up by one (`stream` 3→4, `data` 4→5, …). Old agents still running in the cluster would send `stream` as field 3 and the new controller would read it as an `int64` offset — and `data` would land in `stream`. Adding a field is safe only at a new, unused number.\n\nLet me check what main has so I can restore the old numbers and give `offset` the next free one."),
    B("cd {P} && git show main:proto/forge/logs/v1/logs.proto | sed -n '/message LogChunk/,/^}/p'",
      "Show LogChunk on main",
      "message LogChunk {\n  string job_id = 1;\n  string step = 2;\n  Stream stream = 3;\n  bytes data = 4;\n  google.protobuf.Timestamp emitted_at = 5;\n}"),
    U("ugh, i sorted them to look nice. ok fix it"),
    E("proto/forge/logs/v1/logs.proto",
      "  string job_id = 1;\n  string step = 2;\n  // byte offset of data[0] within the step log\n  int64 offset = 3;\n  Stream stream = 4;\n  bytes data = 5;\n  google.protobuf.Timestamp emitted_at = 6;\n}",
      "  string job_id = 1;\n  string step = 2;\n  Stream stream = 3;\n  bytes data = 4;\n  google.protobuf.Timestamp emitted_at = 5;\n  // byte offset of data[0] within the step log. Added after v1 shipped,\n  // so it keeps the next free number even if it reads better higher up.\n  int64 offset = 6;\n}"),
    B("cd {P} && buf lint proto && buf breaking proto --against '.git#branch=main,subdir=proto' && echo OK",
      "Lint and breaking check", "OK"),
    B("cd {P} && buf generate proto && go build ./... && go test ./internal/logs/...",
      "Regenerate code and run log tests",
      "ok  \tgit.fernhill.dev/platform/forge/internal/logs\t0.412s"),
    A("Fixed: the existing fields keep 1–5 and `offset` is 6. `buf breaking` passes, and the regenerated code builds with the log tests green.\n\nThe Go field names didn't change, so none of the code that uses `chunk.Offset` needs touching."),
    U("does the tail client use offset already? i want the dashboard to resume after reconnect"),
    G("GetOffset\\(\\)|\\.Offset", "internal/logs",
      "internal/logs/server.go:88:\t\tif req.FromOffset > 0 && c.Offset+int64(len(c.Data)) <= req.FromOffset {\n"
      "internal/logs/agentclient.go:64:\t\tOffset: s.written,"),
    A("The agent fills it (`agentclient.go:64`) and `Tail` already skips chunks that end before `FromOffset`. The missing piece is on the dashboard side: `LogViewer` doesn't remember the last offset it got when it reconnects. That's a frontend change; I can do it in a separate branch if you want, so this one stays a proto fix."),
    U("separate branch yeah. push this one"),
    B("cd {P} && git add proto gen && git commit -qm 'logs: keep LogChunk field numbers, add offset as 6' && git push -q && git log --oneline -1",
      "Commit and push the proto fix",
      "9b41d2e logs: keep LogChunk field numbers, add offset as 6"),
    A("Pushed as `9b41d2e`. CI should go green on `buf breaking` now."),
])

# c03 (day 86) RULE d01: job ids are UUIDv7
chat("c03", 86, [
    U("before the jobs migration goes in i want job ids sorted out. right now its bigserial and the dashboard urls are /jobs/48213. what are our options"),
    R("db/migrations/0003_jobs.up.sql",
      "CREATE TABLE jobs (\n    id           bigserial PRIMARY KEY,\n    pipeline_id  bigint NOT NULL REFERENCES pipelines(id),\n    team         text NOT NULL,\n    lane         text NOT NULL DEFAULT 'default',\n    state        text NOT NULL DEFAULT 'queued',\n    spec         jsonb NOT NULL,\n    created_at   timestamptz NOT NULL DEFAULT now(),\n    started_at   timestamptz,\n    finished_at  timestamptz\n);\n\nCREATE INDEX jobs_state_created ON jobs (state, created_at);\n"),
    G("JobID|job_id", "internal",
      "internal/queue/queue.go:22:type JobID int64\n"
      "internal/queue/queue.go:58:\tvar id JobID\n"
      "internal/logs/server.go:51:\tjobID, err := strconv.ParseInt(req.JobId, 10, 64)\n"
      "internal/runner/k8s/pod.go:34:\t\t\t\"forge.fernhill.dev/job\": strconv.FormatInt(int64(j.ID), 10),\n"
      "internal/cache/scope.go:17:\treturn fmt.Sprintf(\"job/%d\", id)\n"
      "internal/api/jobs.go:40:\tid, err := strconv.ParseInt(chi.URLParam(r, \"id\"), 10, 64)"),
    A("Ids are already in a few places (queue, log service, pod labels, cache scope, API). It's still early enough to change the type everywhere. The three realistic options:\n\n1. **Keep `bigserial`.** Smallest, index-friendly, and what we have. Downsides: the URL shows how many builds we run and lets anyone walk `/jobs/48212`, `/jobs/48211`… The agent can't mint an id before the insert. And if we ever run a second controller database (other region) the sequences collide.\n2. **UUIDv7** in a native `uuid` column. Time-ordered (the first 48 bits are a millisecond timestamp), so inserts stay append-mostly on the btree like a serial does. Not guessable. `github.com/google/uuid` (which we already vendor) has `uuid.NewV7()`. 16 bytes vs 8.\n3. **ULID** (`oklog/ulid`). Also time-ordered, and the 26-char Crockford string looks nicer in URLs. But Postgres has no ULID type, so we'd store it as `text` (bigger, slower compares) or stuff it into `uuid` and convert at every boundary — two spellings of the same id in logs and in the DB.\n\nI'd go with 2."),
    U("the second one. bigserial leaks volume to every contractor with dashboard access, and i dont want to play ulid<->uuid conversion games in psql at 2am"),
    U("pod labels have a 63 char limit, uuid fits right?"),
    A("Yes, a UUID string is 36 chars, well under the 63-char label value limit, and it's only `[0-9a-f-]`, which is valid in a label value. Changing the migration and the `JobID` type now."),
    E("db/migrations/0003_jobs.up.sql",
      "    id           bigserial PRIMARY KEY,",
      "    -- UUIDv7, minted by the controller (uuid.NewV7), time-ordered so the\n    -- pkey index stays append-mostly. Never expose a sequence in URLs.\n    id           uuid PRIMARY KEY,"),
    R("internal/queue/queue.go",
      "package queue\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n\n\t\"github.com/jackc/pgx/v5/pgxpool\"\n)\n\ntype JobID int64\n\ntype Job struct {\n\tID       JobID\n\tPipeline int64\n\tTeam     string\n\tLane     string\n\tSpec     json.RawMessage\n}\n\ntype Queue struct{ db *pgxpool.Pool }\n\nfunc (q *Queue) Enqueue(ctx context.Context, j *Job) (JobID, error) {\n\tvar id JobID\n\terr := q.db.QueryRow(ctx,\n\t\t`INSERT INTO jobs (pipeline_id, team, lane, spec) VALUES ($1,$2,$3,$4) RETURNING id`,\n\t\tj.Pipeline, j.Team, j.Lane, j.Spec).Scan(&id)\n\treturn id, err\n}\n"),
    E("internal/queue/queue.go",
      "type JobID int64\n",
      "// JobID is a UUIDv7. Mint with NewJobID, never with uuid.New (v4 is random and\n// scatters inserts across the index).\ntype JobID = uuid.UUID\n\nfunc NewJobID() (JobID, error) { return uuid.NewV7() }\n"),
    E("internal/queue/queue.go",
      "\tvar id JobID\n\terr := q.db.QueryRow(ctx,\n\t\t`INSERT INTO jobs (pipeline_id, team, lane, spec) VALUES ($1,$2,$3,$4) RETURNING id`,\n\t\tj.Pipeline, j.Team, j.Lane, j.Spec).Scan(&id)\n\treturn id, err",
      "\tid, err := NewJobID()\n\tif err != nil {\n\t\treturn JobID{}, err\n\t}\n\t_, err = q.db.Exec(ctx,\n\t\t`INSERT INTO jobs (id, pipeline_id, team, lane, spec) VALUES ($1,$2,$3,$4,$5)`,\n\t\tid, j.Pipeline, j.Team, j.Lane, j.Spec)\n\treturn id, err"),
    E("internal/queue/queue.go",
      "\t\"github.com/jackc/pgx/v5/pgxpool\"\n",
      "\t\"github.com/google/uuid\"\n\t\"github.com/jackc/pgx/v5/pgxpool\"\n"),
    A("Now the call sites that parse or format the id as an integer."),
    E("internal/logs/server.go",
      "\tjobID, err := strconv.ParseInt(req.JobId, 10, 64)",
      "\tjobID, err := uuid.Parse(req.JobId)"),
    E("internal/runner/k8s/pod.go",
      "\t\t\t\"forge.fernhill.dev/job\": strconv.FormatInt(int64(j.ID), 10),",
      "\t\t\t\"forge.fernhill.dev/job\": j.ID.String(),"),
    E("internal/cache/scope.go",
      "\treturn fmt.Sprintf(\"job/%d\", id)",
      "\treturn \"job/\" + id.String()"),
    E("internal/api/jobs.go",
      "\tid, err := strconv.ParseInt(chi.URLParam(r, \"id\"), 10, 64)",
      "\tid, err := uuid.Parse(chi.URLParam(r, \"id\"))"),
    B("cd {P} && goimports -w internal && go build ./... && go test ./internal/... 2>&1 | tail -12",
      "Build and test after the id change",
      "ok  \tgit.fernhill.dev/platform/forge/internal/api\t0.388s\nok  \tgit.fernhill.dev/platform/forge/internal/cache\t0.902s\nok  \tgit.fernhill.dev/platform/forge/internal/logs\t0.431s\nok  \tgit.fernhill.dev/platform/forge/internal/queue\t2.113s\nok  \tgit.fernhill.dev/platform/forge/internal/runner/k8s\t0.275s\nok  \tgit.fernhill.dev/platform/forge/internal/sched\t1.604s\nok  \tgit.fernhill.dev/platform/forge/internal/spec\t0.198s"),
    U("add a test that ids actually sort by creation time, someone will 'fix' it to uuid.New() one day"),
    W("internal/queue/id_test.go",
      "package queue\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestJobIDsSortByCreation(t *testing.T) {\n\tprev, _ := NewJobID()\n\tfor i := 0; i < 1000; i++ {\n\t\tif i%100 == 0 {\n\t\t\ttime.Sleep(2 * time.Millisecond)\n\t\t}\n\t\tid, err := NewJobID()\n\t\tif err != nil {\n\t\t\tt.Fatal(err)\n\t\t}\n\t\tif id.Version() != 7 {\n\t\t\tt.Fatalf(\"job id %s is version %d, want 7\", id, id.Version())\n\t\t}\n\t\tif id.String() <= prev.String() {\n\t\t\tt.Fatalf(\"ids not increasing: %s after %s\", id, prev)\n\t\t}\n\t\tprev = id\n\t}\n}\n"),
    B("cd {P} && go test ./internal/queue -run TestJobIDsSortByCreation -count=3 -v | tail -4",
      "Run the ordering test",
      "=== RUN   TestJobIDsSortByCreation\n--- PASS: TestJobIDsSortByCreation (0.02s)\nPASS\nok  \tgit.fernhill.dev/platform/forge/internal/queue\t0.081s"),
    A("Done:\n- `jobs.id` is `uuid`, minted in Go with `uuid.NewV7()` through `queue.NewJobID()`.\n- Log service, pod labels, cache scope and the API parse/format UUIDs.\n- `TestJobIDsSortByCreation` fails if anyone swaps in v4 or another non-monotonic generator.\n\nThe dashboard route is `/jobs/:id` already and just passes the string through, so nothing to change there."),
    U("👍"),
])

# c04 (day 84) unrelated: dashboard job list flicker, rows keyed by index
chat("c04", 84, [
    U("dashboard job list flickers every poll and the expanded row jumps to a different job sometimes. mara"),
    R("dashboard/src/pages/JobList.tsx",
      "import { useQuery } from '@tanstack/react-query';\nimport { useState } from 'react';\nimport { fetchJobs } from '../api';\nimport { JobRow } from '../components/JobRow';\n\nexport function JobList({ team }: { team: string }) {\n  const [expanded, setExpanded] = useState<number | null>(null);\n  const { data } = useQuery({\n    queryKey: ['jobs'],\n    queryFn: () => fetchJobs(team),\n    refetchInterval: 3000,\n  });\n\n  return (\n    <table className=\"jobs\">\n      <tbody>\n        {data?.jobs.map((job, i) => (\n          <JobRow\n            key={i}\n            job={job}\n            open={expanded === i}\n            onToggle={() => setExpanded(expanded === i ? null : i)}\n          />\n        ))}\n      </tbody>\n    </table>\n  );\n}\n"),
    A("Three things in here:\n\n1. `key={i}`: when a new job arrives at the top, every row's index moves by one, so React reuses the wrong DOM rows and re-renders the whole list. That's the flicker.\n2. `expanded` also stores the index, so after a new job arrives the \"open\" row is a different job. That's the jump.\n3. `queryKey: ['jobs']` doesn't include `team`, so switching teams briefly shows the previous team's cached list.\n\nAll three go away if we key by `job.id`."),
    E("dashboard/src/pages/JobList.tsx",
      "  const [expanded, setExpanded] = useState<number | null>(null);\n  const { data } = useQuery({\n    queryKey: ['jobs'],",
      "  const [expanded, setExpanded] = useState<string | null>(null);\n  const { data } = useQuery({\n    queryKey: ['jobs', team],"),
    E("dashboard/src/pages/JobList.tsx",
      "        {data?.jobs.map((job, i) => (\n          <JobRow\n            key={i}\n            job={job}\n            open={expanded === i}\n            onToggle={() => setExpanded(expanded === i ? null : i)}\n          />",
      "        {data?.jobs.map((job) => (\n          <JobRow\n            key={job.id}\n            job={job}\n            open={expanded === job.id}\n            onToggle={() => setExpanded(expanded === job.id ? null : job.id)}\n          />"),
    B("cd {P}/dashboard && npx tsc --noEmit && npx vitest run src/pages 2>&1 | tail -6",
      "Typecheck and run page tests",
      " ✓ src/pages/JobList.test.tsx (3 tests) 48ms\n ✓ src/pages/JobDetail.test.tsx (4 tests) 61ms\n\n Test Files  2 passed (2)\n      Tests  7 passed (7)\n   Duration  1.21s"),
    U("still a tiny flash when the poll comes back, like the table goes empty for a frame"),
    R("dashboard/src/components/JobRow.tsx",
      "import { memo } from 'react';\nimport type { Job } from '../api';\nimport { StatusBadge } from './StatusBadge';\nimport { Duration } from './Duration';\n\nexport const JobRow = ({ job, open, onToggle }: { job: Job; open: boolean; onToggle: () => void }) => (\n  <>\n    <tr onClick={onToggle} className={open ? 'open' : ''}>\n      <td><StatusBadge state={job.state} /></td>\n      <td>{job.pipeline}</td>\n      <td>{job.ref}</td>\n      <td><Duration from={job.startedAt} to={job.finishedAt} /></td>\n    </tr>\n    {open && <tr className=\"detail\"><td colSpan={4}>{job.steps.map(s => s.name).join(' → ')}</td></tr>}\n  </>\n);\n"),
    G("placeholderData|keepPreviousData", "dashboard/src", "No matches found"),
    A("On a query key change (e.g. when `team` changes or the cache entry was garbage collected) react-query returns `data: undefined` until the fetch comes back. With the key now including `team` that happens on every team switch. `placeholderData: keepPreviousData` keeps the last list on screen while the new one loads. The `<>` fragment in `JobRow` is fine with the new keys."),
    E("dashboard/src/pages/JobList.tsx",
      "    queryKey: ['jobs', team],\n    queryFn: () => fetchJobs(team),\n    refetchInterval: 3000,",
      "    queryKey: ['jobs', team],\n    queryFn: () => fetchJobs(team),\n    refetchInterval: 3000,\n    placeholderData: keepPreviousData,"),
    E("dashboard/src/pages/JobList.tsx",
      "import { useQuery } from '@tanstack/react-query';",
      "import { keepPreviousData, useQuery } from '@tanstack/react-query';"),
    B("cd {P}/dashboard && npx tsc --noEmit && npx vitest run 2>&1 | tail -4",
      "Typecheck and full dashboard tests",
      " Test Files  9 passed (9)\n      Tests  41 passed (41)\n   Start at  10:02:17\n   Duration  2.88s"),
    A("Done. Rows are keyed by job id, the open row follows the job, the query key includes the team, and the previous list stays on screen while a refetch is in flight. Tests and typecheck pass."),
    U("perfect, no more flashing"),
])
