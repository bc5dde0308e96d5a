"""The MTurk client's own CPU per call (issue 26: the loop's CPU per assignment), and its floor.

    .venv/bin/python benchmarks/e2e_client.py [--calls 500 --rounds 4]

A minimal HTTP server in another process answers every request at once (`{}` for
ApproveAssignment, five submitted assignments with their answer XML for
ListAssignmentsForHIT, as the local endpoint does), so what is measured is the calling
process only (`time.process_time`): the real boto3 client over HTTP — building, validating and
signing the request, urllib3 and http.client, parsing the response. Two clients, interleaved
round by round: the project's (crowd.marketplaces.mturk.client) and the same with botocore's
default User-Agent, rebuilt for every request (the client before the fixed one). Printed:
ms of CPU per call, the median over the rounds, for each client and operation; then the
floor this sets on the loop's CPU per assignment (one ApproveAssignment each, plus a fifth
of a HIT's CreateHITWithHITType, ListAssignmentsForHIT and DeleteHIT). The last line is
every figure as one JSON object. No database, no Django server: it needs nothing running.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ASSIGNMENT_ID = "3PR3LXCWSFNV4OJWZBHIMQOIJVSX9G"
HIT_ID = "3PR3LXCWSFNV4OJWZBHIMQOIJVSX9H"
ANSWER = (
    '<QuestionFormAnswers xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
    '2005-10-01/QuestionFormAnswers.xsd">'
    + "".join(
        f"<Answer><QuestionIdentifier>p{n}</QuestionIdentifier><FreeText>{n}</FreeText></Answer>" for n in range(5)
    )
    + "</QuestionFormAnswers>"
)
LISTING = json.dumps(
    {
        "NumResults": 5,
        "Assignments": [
            {
                "AssignmentId": f"{ASSIGNMENT_ID[:-1]}{n}",
                "WorkerId": f"A2YUCJ28XANFO{n}",
                "HITId": HIT_ID,
                "AssignmentStatus": "Submitted",
                "AutoApprovalTime": 1800000000.0,
                "AcceptTime": 1790000000.0,
                "SubmitTime": 1790000100.0,
                "Deadline": 1790000600.0,
                "Answer": ANSWER,
            }
            for n in range(5)
        ],
    }
).encode()


class _Answering(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK wait between them

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        target = self.headers.get("X-Amz-Target", "")
        body = LISTING if target.endswith("ListAssignmentsForHIT") else b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, *args) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per operation, client and round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        ThreadingHTTPServer(("127.0.0.1", args.serve), _Answering).serve_forever()
        return 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        figures = _measure(f"http://127.0.0.1:{port}/", args)
    finally:
        server.kill()
        server.wait()
    print(json.dumps(figures))
    return 0


def _clients(url: str) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SALIENCE_ENV", "development")
    os.environ.setdefault("DATABASE_URL", "sqlite://:memory:")
    import boto3
    import django
    from botocore.config import Config

    django.setup()
    from crowd.marketplaces.mturk import client as mturk

    ours = mturk._client(mturk.Environment.LOCAL, url, mturk.MAX_ATTEMPTS, mturk.PATIENT_TIMEOUTS)
    default_agent = boto3.client(
        "mturk",
        region_name=mturk.REGION,
        endpoint_url=url,
        aws_access_key_id=mturk.LOCAL_ACCESS_KEY,
        aws_secret_access_key=mturk.LOCAL_SECRET_KEY,
        config=Config(
            retries={"mode": "standard", "max_attempts": mturk.MAX_ATTEMPTS},
            connect_timeout=mturk.PATIENT_TIMEOUTS[0],
            read_timeout=mturk.PATIENT_TIMEOUTS[1],
        ),
    )
    return {"project's client": ours, "botocore's default User-Agent": default_agent}


OPERATIONS = {
    "ApproveAssignment": lambda client: client.approve_assignment(AssignmentId=ASSIGNMENT_ID),
    "ListAssignmentsForHIT": lambda client: client.list_assignments_for_hit(
        HITId=HIT_ID, AssignmentStatuses=["Submitted", "Approved", "Rejected"], MaxResults=100
    ),
}


def _measure(url: str, args: argparse.Namespace) -> dict:
    clients = _clients(url)
    for client in clients.values():  # connections open, models loaded
        for call in OPERATIONS.values():
            for _ in range(20):
                call(client)
    samples: dict[str, dict[str, list[float]]] = {name: {op: [] for op in OPERATIONS} for name in clients}
    for _ in range(args.rounds):
        for operation, call in OPERATIONS.items():
            for name, client in clients.items():
                started = time.process_time()
                for _ in range(args.calls):
                    call(client)
                samples[name][operation].append(1000 * (time.process_time() - started) / args.calls)
    load = os.getloadavg()
    per_call = {
        name: {operation: round(statistics.median(values), 3) for operation, values in by_operation.items()}
        for name, by_operation in samples.items()
    }
    ours = per_call["project's client"]
    # per assignment: its ApproveAssignment, and a fifth of its HIT's create, listing and delete
    # (the empty answers of CreateHITWithHITType and DeleteHIT cost what ApproveAssignment's does)
    floor = ours["ApproveAssignment"] * (1 + 2 / 5) + ours["ListAssignmentsForHIT"] / 5
    print(f"MTurk client CPU per call (ms, median of {args.rounds} rounds × {args.calls} calls; load {load[0]:.2f}):")
    for name, by_operation in per_call.items():
        print(f"  {name}: " + ", ".join(f"{operation} {ms}" for operation, ms in by_operation.items()))
    print(f"  floor on the loop's CPU per assignment from the client alone: {floor:.2f} ms")
    return {"ms_per_call": per_call, "client_floor_ms_per_assignment": round(floor, 2), "load": round(load[0], 2)}


if __name__ == "__main__":
    sys.exit(main())
