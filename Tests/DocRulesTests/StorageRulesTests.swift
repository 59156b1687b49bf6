import DocModel
import DocTestSupport
import DocTestTraits
import Foundation
import Testing
@testable import DocRules

/// The `service firebase.storage` block: attachments' rules, in the same file as the
/// Firestore rules, decided by `RuleSet.evaluate(storage:)`.
@Suite(.cpuBound) struct StorageRulesTests {
    static let id = String(repeating: "ab", count: 32)
    static let ann = RulesAuth(uid: "ann")

    /// The example of the task and of docs/rules.md: uploads of images under 5 MiB.
    static let imageRules = try! RuleSet.parse(source: """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /attachments/{id} {
              allow read: if request.auth != null;
              allow write: if request.resource.size < 5 * 1024 * 1024
                && request.resource.contentType.matches('image/.*');
            }
          }
        }
        """, file: "storage.rules")

    static func object(size: Int64 = 1_000, contentType: String = "image/png", metadata: [String: String] = [:],
                       name: String = "attachments/\(id)") -> StorageObject {
        StorageObject(name: name, size: size, contentType: contentType, sha256: id, timeCreated: testTime,
                      metadata: metadata)
    }

    static func request(_ method: RulesMethod, _ path: String = "attachments/\(id)", auth: RulesAuth? = ann,
                        resource: StorageObject? = nil, upload: StorageObject? = nil,
                        bucket: String = "default") -> StorageRulesRequest {
        StorageRulesRequest(method: method, path: path, bucket: bucket, auth: auth, resource: resource,
                            requestResource: upload, time: testTime)
    }

    // MARK: - Parsing

    @Test func aSecondStorageBlockIsAnError() throws {
        let e = try #require(parseError("""
            service firebase.storage {
            }
            service cloud.firestore {
            }
            service firebase.storage {
            }
            """))
        #expect(e.code == .invalidRule)
        #expect(e.message == "duplicate 'service firebase.storage'")
        #expect(e.line == 5 && e.column == 1)
    }

    @Test func unknownServicesAreStillRefused() throws {
        let e = try #require(parseError("service firebase.database {\n}"))
        #expect(e.code == .invalidRule)
        #expect(e.message.hasPrefix("unsupported service 'firebase.database'"), "\(e)")
        #expect(e.expected == ["'cloud.firestore'", "'firebase.storage'"])
        let none = try #require(parseError("rules_version = '2';\n"))
        #expect(none.code == .syntax && none.message.hasPrefix("no 'service cloud.firestore"))
        let twice = try #require(parseError("service cloud.firestore {}\nservice firebase.storage {}\nservice cloud.firestore {}"))
        #expect(twice.message == "duplicate 'service cloud.firestore'" && twice.line == 3)
    }

    @Test func eitherBlockMayStandAloneOrComeFirst() throws {
        let storageOnly = try RuleSet.parse(source: "service firebase.storage { match /b/{bucket}/o { match /x { allow read; } } }")
        #expect(storageOnly.hasStorageRules && !storageOnly.hasFirestoreRules)
        #expect(storageOnly.evaluate(storage: Self.request(.get, "x")).isAllowed)
        let denied = storageOnly.evaluate(getRequest("users/ann", auth: Self.ann))
        #expect(!denied.isAllowed)
        #expect(denied.message.hasSuffix("firestore.rules has no 'service cloud.firestore' block"), "\(denied.message)")

        let both = try RuleSet.parse(source: """
            service firebase.storage { match /b/{bucket}/o { match /x { allow read; } } }
            service cloud.firestore { match /databases/{db}/documents { match /users/{u} { allow read; } } }
            """)
        #expect(both.hasStorageRules && both.hasFirestoreRules && both.warnings.isEmpty)
        #expect(both.evaluate(getRequest("users/ann")).isAllowed)
        #expect(both.evaluate(storage: Self.request(.get, "x")).isAllowed)
        // The services do not see each other's paths.
        #expect(!both.evaluate(storage: Self.request(.get, "users/ann")).isAllowed)
        #expect(!both.evaluate(getRequest("x/y")).isAllowed)
    }

    @Test func topLevelFunctionsAreVisibleInTheStorageBlock() throws {
        let rules = try RuleSet.parse(source: """
            function signedIn() { return request.auth != null; }
            service firebase.storage {
              match /b/{bucket}/o { match /attachments/{id} { allow read: if signedIn(); } }
            }
            """)
        #expect(rules.warnings.isEmpty)
        #expect(rules.evaluate(storage: Self.request(.get)).isAllowed)
        #expect(!rules.evaluate(storage: Self.request(.get, auth: nil)).isAllowed)
    }

    // MARK: - Deciding

    @Test func uploadsAreDecidedBySizeAndContentType() throws {
        let rules = Self.imageRules
        let small = rules.evaluate(storage: Self.request(.create, upload: Self.object(size: 1_024 * 1_024)))
        #expect(small.isAllowed, "\(small.message)")
        #expect(small.grantingRule?.line == 6)
        #expect(small.message == "allowed: create on /b/default/o/attachments/\(Self.id) by allow write at line 6 (match /b/{bucket}/o/attachments/{id}): granted")

        let atLimit = rules.evaluate(storage: Self.request(.create, upload: Self.object(size: 5 * 1_024 * 1_024)))
        #expect(!atLimit.isAllowed)
        #expect(atLimit.outcomes.map(\.result) == [.denied])
        #expect(atLimit.error?.code == .permissionDenied)
        #expect(rules.evaluate(storage: Self.request(.create, upload: Self.object(size: 5 * 1_024 * 1_024 - 1))).isAllowed)

        let text = rules.evaluate(storage: Self.request(.create, upload: Self.object(contentType: "text/plain")))
        #expect(!text.isAllowed && text.outcomes.map(\.result) == [.denied])
        // `matches` is a whole-string match.
        #expect(!rules.evaluate(storage: Self.request(.update, upload: Self.object(contentType: "x-image/png"))).isAllowed)
        #expect(rules.evaluate(storage: Self.request(.update, resource: Self.object(), upload: Self.object(contentType: "image/jpeg"))).isAllowed)

        // A create without an incoming object: `request.resource` is null, the rule errs and denies.
        let missing = rules.evaluate(storage: Self.request(.create))
        #expect(!missing.isAllowed)
        #expect(missing.firstError?.contains("null") == true, "\(missing.message)")
    }

    @Test func readAndWriteExpandAsForDocuments() throws {
        let rules = try RuleSet.parse(source: """
            service firebase.storage {
              match /b/{bucket}/o {
                match /public/{name} { allow read; }
                match /inbox/{name} { allow write; }
                match /thumbs/{name} { allow get; }
              }
            }
            """)
        for method in RulesMethod.allCases {
            let isRead = method == .get || method == .list
            #expect(rules.evaluate(storage: Self.request(method, "public/a")).isAllowed == isRead, "\(method)")
            #expect(rules.evaluate(storage: Self.request(method, "inbox/a", upload: Self.object())).isAllowed == !isRead, "\(method)")
            #expect(rules.evaluate(storage: Self.request(method, "thumbs/a")).isAllowed == (method == .get), "\(method)")
        }
        let d = rules.evaluate(storage: Self.request(.delete, "public/a"))
        #expect(d.outcomes.isEmpty && d.message == "permission denied: delete on /b/default/o/public/a: no rule allows it")
    }

    @Test func wildcardsBindBucketSegmentsAndRecursivePaths() throws {
        let rules = try RuleSet.parse(source: """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /users/{uid}/{rest=**} {
                  allow read: if request.auth.uid == uid && bucket == 'default'
                    && rest[0] == 'photos' && request.path == /b/default/o/users/$(uid)/$(rest);
                }
              }
            }
            """)
        let deep = rules.evaluate(storage: Self.request(.get, "users/ann/photos/2024/a.jpg"))
        #expect(deep.isAllowed, "\(deep.message)")
        #expect(deep.grantingRule?.matchPath == "/b/{bucket}/o/users/{uid}/{rest=**}")
        #expect(!rules.evaluate(storage: Self.request(.get, "users/ann/videos/a.mp4")).isAllowed)
        #expect(!rules.evaluate(storage: Self.request(.get, "users/ann/photos/a.jpg", auth: RulesAuth(uid: "bob"))).isAllowed)
        #expect(!rules.evaluate(storage: Self.request(.get, "users/ann/photos/a.jpg", bucket: "other")).isAllowed)
        #expect(rules.evaluate(storage: Self.request(.get, "users/ann/photos/a.jpg")).isAllowed)

        let bad = rules.evaluate(storage: Self.request(.get, "users//photos"))
        #expect(!bad.isAllowed && bad.message.hasSuffix("not an object path (empty bucket or path segment)"))
        #expect(!rules.evaluate(storage: Self.request(.get, "")).isAllowed)
    }

    @Test func unauthenticatedCallersAreDenied() {
        let d = Self.imageRules.evaluate(storage: Self.request(.get, auth: nil))
        #expect(!d.isAllowed)
        #expect(d.outcomes.count == 1 && d.outcomes[0].result == .denied)   // `null != null`: false, no error
        #expect(d.outcomes[0].matchPath == "/b/{bucket}/o/attachments/{id}")
        #expect(d.outcomes[0].methods == "read" && d.outcomes[0].line == 5)
        #expect(Self.imageRules.evaluate(storage: Self.request(.get)).isAllowed)
    }

    @Test func objectsHaveFirebaseStorageFieldNames() throws {
        let rules = try RuleSet.parse(source: """
            service firebase.storage {
              match /b/{bucket}/o {
                match /attachments/{id} {
                  allow get: if resource.name == 'attachments/' + id && resource.bucket == bucket
                    && resource.sha256 == id && resource.size == 2048 && resource.contentType == 'image/png'
                    && resource.timeCreated == request.time && resource.updated > resource.timeCreated - duration.value(1, 's')
                    && resource.metadata.owner == request.auth.uid && request.method == 'get';
                  allow list: if resource.md5Hash != null;
                  allow delete: if request.resource == null && resource.metadata.get('owner', '') == request.auth.uid;
                }
              }
            }
            """)
        let stored = StorageObject(name: "attachments/\(Self.id)", size: 2048, contentType: "image/png", sha256: Self.id,
                                   timeCreated: testTime, metadata: ["owner": "ann"])
        #expect(rules.evaluate(storage: Self.request(.get, resource: stored)).isAllowed)
        #expect(!rules.evaluate(storage: Self.request(.get, auth: RulesAuth(uid: "bob"), resource: stored)).isAllowed)
        #expect(rules.evaluate(storage: Self.request(.delete, resource: stored)).isAllowed)
        // A missing object: `resource` is null.
        let absent = rules.evaluate(storage: Self.request(.get))
        #expect(!absent.isAllowed && absent.firstError?.contains("of null") == true, "\(absent.message)")
        // `md5Hash` is not computed by doccache: reading it is an evaluation error.
        let md5 = rules.evaluate(storage: Self.request(.list, resource: stored))
        #expect(!md5.isAllowed && md5.firstError?.contains("no field 'md5Hash'") == true, "\(md5.message)")
    }

    @Test func firestoreLookupsAreNotSupported() throws {
        let rules = try RuleSet.parse(source: """
            rules_version = '2';
            function isMember(uid) { return exists(/databases/(default)/documents/members/$(uid)); }
            service cloud.firestore {
              match /databases/{db}/documents { match /rooms/{r} { allow read: if isMember(request.auth.uid); } }
            }
            service firebase.storage {
              match /b/{bucket}/o {
                match /a/{id} { allow read: if firestore.get(/databases/(default)/documents/users/$(request.auth.uid)).data.ok; }
                match /b/{id} { allow read: if exists(/databases/(default)/documents/users/$(request.auth.uid)); }
                match /c/{id} { allow read: if isMember(request.auth.uid); }
              }
            }
            """, file: "mixed.rules")
        // Warned where the storage block itself reads documents; not for the shared top-level
        // function, which the Firestore block uses.
        #expect(rules.warnings.map(\.line) == [8, 9], "\(rules.warnings)")
        #expect(rules.warnings.first?.message.contains("'firestore.get()'") == true)
        #expect(rules.warnings.last?.message.contains("'exists()' reads Firestore documents") == true)

        let viaNamespace = rules.evaluate(storage: Self.request(.get, "a/1"))
        #expect(!viaNamespace.isAllowed)
        #expect(viaNamespace.firstError?.contains("is not supported") == true, "\(viaNamespace.message)")
        let viaBuiltin = rules.evaluate(storage: Self.request(.get, "b/1"))
        #expect(!viaBuiltin.isAllowed)
        #expect(viaBuiltin.firstError?.contains("storage rules cannot do") == true, "\(viaBuiltin.message)")
        let viaFunction = rules.evaluate(storage: Self.request(.get, "c/1"))
        #expect(!viaFunction.isAllowed && viaFunction.firstError?.contains("storage rules cannot do") == true)
        // The Firestore block still reads documents.
        let members = InMemoryDocumentLookup(documents: [key("members/ann"): doc("members/ann", [:])])
        #expect(rules.evaluate(getRequest("rooms/r1", auth: Self.ann), lookup: members).isAllowed)
    }

    @Test func aFileWithoutAStorageBlockDeniesEveryStorageRequest() throws {
        let rules = try RuleSet.parse(source: rulesSource("match /{p=**} { allow read, write; }"), file: "app.rules")
        #expect(!rules.hasStorageRules && rules.hasFirestoreRules)
        for method in RulesMethod.allCases {
            let d = rules.evaluate(storage: Self.request(method, upload: Self.object()))
            #expect(!d.isAllowed && d.outcomes.isEmpty)
            #expect(d.message == "permission denied: \(method) on /b/default/o/attachments/\(Self.id): app.rules has no 'service firebase.storage' block")
        }
    }

    @Test func rulesCheckLoadsFilesWithAStorageBlockWithoutWarnings() throws {
        let path = try RulesToolTests.temporaryFile("both.rules", """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{db}/documents { match /{doc=**} { allow read: if request.auth != null; } }
            }
            service firebase.storage {
              function small() { return request.resource.size < 1024; }
              match /b/{bucket}/o { match /{path=**} { allow write: if small() && request.resource.contentType.matches('image/.*'); } }
            }
            """)
        defer { RulesToolTests.remove(path) }
        let report = RulesCheck.run(file: path)
        #expect(report.succeeded && report.warnings.isEmpty)
        #expect(report.ruleSet?.hasStorageRules == true)
        #expect(report.lines == ["rules-check: \(path) loaded (rules_version '2', 0 warnings)"])
    }

    @Test func theDefaultRulesFileHasAStorageBlock() throws {
        let rules = try RuleSet.load(path: packageRoot + "/Rules/firestore.rules")
        #expect(rules.hasStorageRules && rules.hasFirestoreRules && rules.warnings.isEmpty)
        let read = rules.evaluate(storage: Self.request(.get, resource: Self.object()))
        #expect(read.isAllowed)
        #expect(read.grantingRule?.matchPath == "/b/{bucket}/o/attachments/{attachmentId}")
    }
}
