internal import DocModel
internal import Logging

/// Request groups: the requests of a tenant that waited for the same turn, processed together
/// and committed in one store commit instead of one commit (one synced write) each.
///
/// The group's request documents are read at once; each pending request is then decided in
/// arrival order exactly as it would be alone (`evaluate`: base check, handler, scope), but on
/// a ``RequestGroupView``: it sees the writes of the requests before it, and a document one of
/// them wrote counts as changed for its base check. The commit holds, in this order, a
/// verification of every stored document the group read, each applied request's writes and
/// every request's status patch (each conditioned on the pending version read) — so the
/// whole group lands or nothing does. A rejected request is part of the group: its patch
/// records the rejection and it writes nothing.
///
/// When the commit is anything but committed (something read changed, a write was refused,
/// the store failed), every request of the group is processed again on its own
/// (`processOne`), which reads it afresh: nothing the group decided was stored, and a
/// request someone else finalized meanwhile is skipped.
extension RequestProcessor {
    /// A request taken into a group's commit.
    struct GroupMember {
        let ticket: Ticket
        let request: RequestDocument
        let trace: Trace
        /// `applied` or `rejected`, as its patch records it.
        let status: String
    }

    /// Processes the waiting requests `tickets` of `tenant` (arrival order, at least two) as a
    /// group. Every ticket is resolved except those left for a later turn — the requests
    /// from the first one that would take the commit over ``RequestProcessor/maxWritesPerCommit``
    /// mutations on — which are returned, in order.
    func processGroup(_ tickets: [Ticket], tenant: String) async -> [Ticket] {
        let started = ContinuousClock.now
        let access = tickets[0].access
        let read: DocumentsRead
        do {
            read = try await access.read(tickets.map(\.key))
        } catch {
            // Each on its own: that path reports a failing store and leaves the request pending.
            await processAlone(tickets, tenant: tenant, started: started)
            return []
        }
        let view = RequestGroupView(read: access.read, requests: read.documents,
                                    localWriteTime: Timestamp(microseconds: read.version.microseconds))
        var members: [GroupMember] = []
        var writes: [Mutation] = []
        var patches: [Mutation] = []
        var malformed: [Ticket] = []
        var deferred: [Ticket] = []
        for (index, ticket) in tickets.enumerated() {
            guard let document = Self.pendingDocument(read.documents[ticket.key]) else {
                trace(ticket.key, tenant: tenant, origin: ticket.origin).logger.debug("request is not pending: nothing to do")
                ticket.finalized = false   // processed already (or gone)
                continue
            }
            guard let request = try? RequestDocument(document) else {
                malformed.append(ticket)   // its rejection is recorded on its own
                continue
            }
            let trace = trace(ticket.key, tenant: tenant, origin: ticket.origin, started: started)
            trace.logger.debug("processing request", metadata: ["group": "\(tickets.count)"])
            let mark = view.mark
            let verdict: Verdict
            let patch: Mutation
            do {
                let reader = RequestReader { key throws(DocError) in try await view.document(key) }
                verdict = try await evaluate(request, key: ticket.key, tenant: tenant, reader: reader, changed: view.changed, trace: trace)
                if case .apply(let requestWrites, _) = verdict { try await view.readBases(of: requestWrites) }
                patch = try Self.statusPatch(request, verdict)
            } catch {
                // A transient failure (storage unavailable): give up the group; each request
                // is processed on its own, which reports it.
                trace.logger.debug("request group given up: processing its requests one by one", metadata: ["error": "\(error)"])
                await processAlone(tickets.filter { $0.finalized == nil }, tenant: tenant, started: started)
                return []
            }
            var requestWrites: [Mutation] = []
            if case .apply(let converted, _) = verdict { requestWrites = converted }
            let size = view.verificationCount + writes.count + requestWrites.count + patches.count + 1
            if !members.isEmpty && size > maxWritesPerCommit {
                // Over the write limit of one commit: this request and the rest wait for the next turn.
                view.rollBack(to: mark)
                deferred = Array(tickets[index...])
                break
            }
            // A rejection that does not rest on the handler's reads does not verify them.
            if !verdict.restsOnReads { view.rollBack(to: mark) }
            view.apply(requestWrites)
            writes += requestWrites
            patches.append(patch)
            members.append(GroupMember(ticket: ticket, request: request, trace: trace, status: verdict.status))
        }
        if !members.isEmpty {
            await commit(members, view.verifications + writes + patches, tenant: tenant, access: access, started: started)
        }
        await processAlone(malformed, tenant: tenant, started: started)
        return deferred
    }

    /// Commits a group's batch; on anything but committed, processes its requests one by one.
    private func commit(_ members: [GroupMember], _ mutations: [Mutation], tenant: String, access: RequestStoreAccess,
                        started: ContinuousClock.Instant) async {
        // Unique: exactly-once rests on the patches' preconditions, not on the batch key.
        let batch = BatchKey(clientID: "request-group:" + String(UInt64.random(in: 0 ... .max), radix: 36), batchID: members.count)
        let requestIDs = members.map(\.trace.requestID).joined(separator: ",")
        let problem: String
        switch await access.commit(batch, mutations, requestIDs) {
        case .success(let answer):
            // Its key is unique: a committed outcome was stored by this call.
            switch answer.outcome.result {
            case .committed:
                for member in members {
                    recordFinalized(member.request, status: member.status, batch: batch, trace: member.trace)
                    member.trace.logger.info("request processed", metadata: ["status": .string(member.status)])
                    member.ticket.finalized = true
                }
                return
            case .rejected(let error):
                problem = "\(error)"
            }
        case .failure(let error):
            problem = "\(error)"
        }
        logger.debug("request group not committed: processing its requests one by one", metadata: [
            "tenant": .string(tenant), "batch": "\(batch)", "requests": "\(members.count)", "error": .string(problem),
        ])
        await processAlone(members.map(\.ticket), tenant: tenant, started: started)
    }

    /// Processes each ticket's request on its own, in order.
    private func processAlone(_ tickets: [Ticket], tenant: String, started: ContinuousClock.Instant) async {
        for ticket in tickets {
            ticket.finalized = await processOne(ticket.key, tenant: tenant, access: ticket.access, origin: ticket.origin, started: started)
        }
    }
}
