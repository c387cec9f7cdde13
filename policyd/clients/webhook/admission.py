"""What each endpoint asks policyd, and policyd's answer as an AdmissionReview answer. policyd
decides; this only carries its answer over, reads what its catalog lacked from the cluster, and
denies when policyd cannot answer (never admits unchecked)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import grpc

from policyd.clients.tls_faults import TlsFault
from policyd.clients.webhook.cluster_reads import ClusterReads
from policyd.clients.webhook.review import ALLOWED, ALWAYS_ALLOWED, Answer, Request
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.edge.metadata_keys import VALIDATION_KEY

log = logging.getLogger("policyd.webhook")
# the StatusCode of a policyd that was not reached (DEADLINE_EXCEEDED is told apart: it names the time)
NOT_ANSWERED = frozenset({grpc.StatusCode.UNAVAILABLE})
# The API server has checked the object against its CRD's schema (and pruned what it does not
# declare) before it asks, as it did the objects read from it: policyd's own field validation
# would only repeat that, and its warnings travel in trailers no review carries
NO_FIELD_VALIDATION = ((VALIDATION_KEY, "Ignore"),)


class Failed(Exception):
    """policyd gave no answer to carry over; ``answer`` is the denial that says so."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.message)
        self.answer = answer


def _one_line(text: str) -> str:
    return " ".join(text.split())


class Reviewer:
    def __init__(
        self,
        policy: policy_pb2_grpc.PolicyServiceStub,
        address: str,
        reads: ClusterReads,
        call_timeout: float,
        tls_fault: Callable[[grpc.RpcError], TlsFault | None],
    ) -> None:
        self.policy = policy
        self.address = address
        self.reads = reads
        self.call_timeout = call_timeout  # --request-timeout: at most this per policyd call
        self.tls_fault = tls_fault  # what disagrees when an unanswered call failed on TLS

    def validate(self, request: Request, deadline: float) -> Answer:
        """Admit; once more with what the cluster has of what policyd's catalog lacked."""
        if request.operation in ALWAYS_ALLOWED:
            return ALLOWED
        obj = rpb.Object(manifest=request.manifest())
        try:
            reply = self._admit(pb.AdmitRequest(object=obj), deadline)
            if reply.missing:
                found = self.reads.manifests(reply.missing, deadline)
                if found:
                    catalog = pb.RequestCatalog(objects=[rpb.Object(manifest=m) for m in found])
                    reply = self._admit(pb.AdmitRequest(object=obj, catalog=catalog), deadline)
        except Failed as failed:
            return failed.answer
        if reply.allowed:
            return Answer(True, warnings=tuple(reply.warnings))
        return Answer(False, reply.denial.message, warnings=tuple(reply.warnings))

    def default(self, request: Request, deadline: float) -> Answer:
        if request.operation in ALWAYS_ALLOWED:
            return ALLOWED
        isvc = rpb.InferenceServiceInput(manifest=request.manifest())
        try:
            reply = self._default(pb.DefaultRequest(inference_service=isvc), deadline)
        except Failed as failed:
            return failed.answer
        return Answer(True, patch=reply.patch)

    def _admit(self, request: pb.AdmitRequest, deadline: float) -> pb.AdmitResponse:
        timeout = self._timeout(deadline)
        try:
            reply: pb.AdmitResponse = self.policy.Admit(request, timeout=timeout, metadata=NO_FIELD_VALIDATION)
        except grpc.RpcError as err:
            raise Failed(self._failed(err, timeout)) from err
        return reply

    def _default(self, request: pb.DefaultRequest, deadline: float) -> pb.DefaultResponse:
        timeout = self._timeout(deadline)
        try:
            reply: pb.DefaultResponse = self.policy.Default(request, timeout=timeout, metadata=NO_FIELD_VALIDATION)
        except grpc.RpcError as err:
            raise Failed(self._failed(err, timeout)) from err
        return reply

    def _timeout(self, deadline: float) -> float:
        timeout = min(self.call_timeout, deadline - time.monotonic())
        if timeout <= 0:
            raise Failed(self._unanswered("no time left within the review's timeout"))
        return timeout

    def _failed(self, err: grpc.RpcError, timeout: float) -> Answer:
        code, details = err.code(), _one_line(err.details() or "")
        if code == grpc.StatusCode.INVALID_ARGUMENT:  # the object itself: OME's webhook denies it too
            return Answer(False, details)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return self._unanswered(f"no answer within {timeout:.3g}s")
        if code in NOT_ANSWERED:
            fault = self.tls_fault(err)
            if fault is not None:  # the webhook's TLS flags and policyd's disagree: say how
                return self._unanswered(f"it {fault.reason}")
            # gRPC's own words (addresses tried, the socket's error) go to the log, not to kubectl
            log.warning("policyd at %s is unavailable: %s", self.address, details)
            return self._unanswered("it is unavailable (not running, or not reachable from the webhook)")
        message = f"policyd at {self.address} failed the review: {code.name}: {details}"
        log.error("%s", message)
        return Answer(False, message, code=500, reason="InternalError")

    def _unanswered(self, why: str) -> Answer:
        message = f"policyd at {self.address} did not answer: {why}"
        log.warning("%s", message)
        return Answer(False, message, code=503, reason="ServiceUnavailable")
