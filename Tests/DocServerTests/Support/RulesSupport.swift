import DocModel
import DocProtocol
import DocRules
import Foundation
import Testing
@testable import DocServer

/// The rules of the enforcement tests; each block serves one kind of check.
let enforcementRules = """
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function signedIn() { return request.auth != null; }
    function item(id) { return /databases/$(database)/documents/items/$(id); }
    function seen(r, i) { return r.size() <= i || exists(item(r[i])); }

    // Notes belong to their owner.
    match /notes/{id} {
      allow get: if resource == null || resource.data.owner == request.auth.uid;
      allow list: if resource.data.owner == request.auth.uid;
      allow create: if request.resource.data.owner == request.auth.uid;
      allow update: if resource.data.owner == request.auth.uid
        && request.resource.data.owner == resource.data.owner;
      allow delete: if resource.data.owner == request.auth.uid;
    }

    // Open to every signed-in member.
    match /public/{id} {
      allow read, write: if signedIn();
    }

    // Logs are written once and deleted, never updated: a soft delete must be a `delete`.
    match /logs/{id} {
      allow read, create, delete: if signedIn();
    }

    // Drafts are updated but never deleted: a soft delete of a draft is refused.
    match /drafts/{id} {
      allow read, create, update: if signedIn();
    }

    // A project is created only together with its log entry (getAfter sees the batch) …
    match /projects/{p} {
      allow read: if signedIn();
      allow create: if existsAfter(/databases/$(database)/documents/projectLogs/$(p));
    }
    match /projectLogs/{p} {
      allow read: if signedIn();
      allow create: if getAfter(/databases/$(database)/documents/projects/$(p)).data.name is string;
    }

    // … while a badge needs a project that existed before the batch (get sees the stored state).
    match /badges/{p} {
      allow create: if exists(/databases/$(database)/documents/projects/$(p));
    }

    // Rooms are readable by members listed in /members (a lookup).
    match /rooms/{room} {
      allow get: if exists(/databases/$(database)/documents/members/$(request.auth.uid));
    }

    match /members/{uid} {
      allow read: if request.auth.uid == uid;
      allow write: if request.auth.token.get('admin', false) == true;
    }

    // Every id in `refs` must name an existing item: one lookup per id (the limits apply).
    match /limited/{id} {
      allow create: if seen(request.resource.data.refs, 0) && seen(request.resource.data.refs, 1)
        && seen(request.resource.data.refs, 2) && seen(request.resource.data.refs, 3)
        && seen(request.resource.data.refs, 4) && seen(request.resource.data.refs, 5)
        && seen(request.resource.data.refs, 6) && seen(request.resource.data.refs, 7)
        && seen(request.resource.data.refs, 8) && seen(request.resource.data.refs, 9)
        && seen(request.resource.data.refs, 10) && seen(request.resource.data.refs, 11);
    }
    match /items/{id} {
      allow write: if request.auth.token.get('admin', false) == true;
    }
  }
}
"""

/// A server enforcing `source` (default: ``enforcementRules``). With `explainDenials` (the
/// default here: these tests check what the rules decided and why) denials carry the rules'
/// detail; without, the terse message clients get from a production server.
func rulesServer(_ source: String = enforcementRules, explainDenials: Bool = true) throws -> TestServer {
    var configuration = ServerConfiguration(rules: try RuleSet.parse(source: source, file: "test.rules"))
    configuration.explainDenials = explainDenials
    return TestServer(configuration: configuration)
}

extension TestServer {
    /// A connection whose token carries `claims` (as ``TokenVerifier`` would verify them).
    func connect(uid: String, claims: [String: Value], client: String? = nil) async throws -> ServerConnection {
        let auth = AuthContext(tenant: "acme", uid: uid, claims: claims, expiresAt: try Timestamp(seconds: 4_000_000_000))
        let connection = try await core.handshake(auth: auth, clientID: client ?? "client-\(uid)")
        guard case .welcome? = connection.outbound.drain().first else { throw DocError(.internal, "no welcome") }
        return connection
    }

    /// Seeds documents as an admin would: straight into the store, past the rules.
    func seed(_ documents: [String: [String: Value]], tenant: String = "acme") async throws {
        let store = try tenantStore(tenant)
        let processor = CommitProcessor(store: store, clock: clock.serverClock, logger: .discarding)
        let mutations = documents.keys.sorted().map { T.set($0, documents[$0]!) }
        let key = BatchKey(clientID: "seed", batchID: Int(clock.micros % 1_000_000_000))
        let processed = try await processor.process(batch: key, mutations: mutations, uid: "seed")
        #expect(processed.applied, "seeding failed: \(processed.outcome.result)")
        clock.advance(by: 1)
    }

    /// The stored document at `path`, if any.
    func stored(_ path: String, tenant: String = "acme") async throws -> Document? {
        try await tenantStore(tenant).documents([T.key(path)]).documents[T.key(path)]
    }
}

extension ServerMessage {
    /// The error of a `writeError`, if this is one.
    var rejection: DocError? { writeError?.error }
}
