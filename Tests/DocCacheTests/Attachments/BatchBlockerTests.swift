import DocModel
import Testing
@testable import DocCache

/// The write queue's gate for attachments (BatchBlocker): which batches it holds back, and
/// when it asks for an attachment to be checked with the server.
@Suite("Batch blocker")
struct BatchBlockerTests {
    static func id(_ n: Int) -> AttachmentID { AttachmentID(digest: (0..<32).map { UInt8(truncatingIfNeeded: n &+ $0) }) }

    static func record(_ n: Int, origin: AttachmentRecord.Origin = .local, progress: AttachmentRecord.Progress = .uploaded,
                       addedSecondsAgo: Int64) -> AttachmentRecord {
        let added = Timestamp(microseconds: Timestamp.now.microseconds - addedSecondsAgo * 1_000_000)
        return AttachmentRecord(id: id(n), size: 10, contentType: "image/jpeg", createdAt: added, origin: origin,
                                progress: progress, lastUsedAt: added)
    }

    static func batch(referring ids: [Int]) -> MutationBatch {
        let data = ObjectValue(Dictionary(uniqueKeysWithValues: ids.map { ("f\($0)", Value.attachment(id($0))) }))
        return MutationBatch(batchID: 1, localWriteTime: .now,
                             mutations: [.set(PersistenceFixtures.key("forms/f"), data)])
    }

    /// Counts the blocker's requests for checks.
    final class Requests { var count = 0 }

    @Test func anAttachmentUploadedHereLongAgoIsCheckedOnceBeforeItsBatchGoes() {
        let blocker = BatchBlocker(confirmationAge: .seconds(3_600))
        blocker.update([Self.record(1, addedSecondsAgo: 7_200), Self.record(2, addedSecondsAgo: 60)])
        let requests = Requests()
        blocker.onCheckNeeded = { requests.count += 1 }

        // Added a minute ago: sent at once. Two hours ago: held while it is checked, and the
        // check is asked for once however often the queue is read.
        #expect(blocker.blockingAttachment(of: Self.batch(referring: [2])) == nil)
        let old = Self.batch(referring: [1, 2])
        #expect(blocker.blockingAttachment(of: old)! == (Self.id(1), .beingChecked))
        #expect(blocker.isBlocked(old))
        #expect(blocker.toCheck == [Self.id(1)])
        #expect(requests.count == 1)

        // Confirmed: sent, and not checked again for the confirmation's lifetime.
        blocker.settled(Self.id(1))
        #expect(blocker.blockingAttachment(of: old) == nil)
        #expect(blocker.toCheck.isEmpty)

        // A refusal by the server asks again, and holds the batch until the answer.
        blocker.check(Self.id(1))
        #expect(blocker.blockingAttachment(of: old)! == (Self.id(1), .beingChecked))
        #expect(requests.count == 2)
        // Found missing: the records now say it is to be uploaded, which holds the batch.
        blocker.checkedMissing(Self.id(1))
        blocker.update([Self.record(1, progress: .localOnly, addedSecondsAgo: 7_200), Self.record(2, addedSecondsAgo: 60)])
        #expect(blocker.blockingAttachment(of: old)! == (Self.id(1), .notUploaded))
        #expect(blocker.toCheck.isEmpty)
    }

    @Test func downloadedAttachmentsAndAZeroAgeFollowTheirRules() {
        // A downloaded attachment counts from its download: checked once that is older than
        // the age (the documents that referred to it may have let go of it since), not before.
        let downloaded = BatchBlocker(confirmationAge: .seconds(3_600))
        downloaded.update([Self.record(3, origin: .downloaded, addedSecondsAgo: 86_400),
                           Self.record(7, origin: .downloaded, addedSecondsAgo: 60)])
        #expect(downloaded.blockingAttachment(of: Self.batch(referring: [3]))! == (Self.id(3), .beingChecked))
        #expect(downloaded.blockingAttachment(of: Self.batch(referring: [7])) == nil)
        #expect(downloaded.toCheck == [Self.id(3)])

        // Age zero: every attachment uploaded here is checked before its first batch; the
        // confirmation then stands (at least a minute), so the batch is not held again.
        let zero = BatchBlocker(confirmationAge: .zero)
        zero.update([Self.record(4, addedSecondsAgo: 1)])
        let batch = Self.batch(referring: [4])
        #expect(zero.blockingAttachment(of: batch)! == (Self.id(4), .beingChecked))
        zero.settled(Self.id(4))
        #expect(zero.blockingAttachment(of: batch) == nil)

        // Not uploaded and failed ones hold the batch, whatever their age; the smallest id is named.
        let waiting = BatchBlocker(confirmationAge: .seconds(3_600))
        waiting.update([Self.record(5, progress: .localOnly, addedSecondsAgo: 1),
                        Self.record(6, progress: .failed(DocError(.permissionDenied, "no")), addedSecondsAgo: 1)])
        let both = Self.batch(referring: [5, 6])
        let expected = min(Self.id(5), Self.id(6))
        #expect(waiting.blockingAttachment(of: both)! == (expected, .notUploaded))
        #expect(waiting.toCheck.isEmpty)
    }
}
