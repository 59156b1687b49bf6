/// A consistent, read-only view of a ``Database`` at the moment it was taken.
///
/// Pass it in ``ReadOptions/snapshot`` to ``Database/get(_:options:)``, ``Database/cursor(options:)``
/// or ``Database/entries(in:reverse:options:)``: writes made after the snapshot are invisible
/// through it.
///
/// The LevelDB snapshot is released by ``release()`` or when the object goes away, whichever
/// comes first, and also when the database is closed. Reading through a released snapshot
/// throws ``LevelDBError/Code/closed``. A snapshot keeps its database object alive.
///
/// `Sendable`: several tasks may read through the same snapshot at once. Releasing waits until
/// no read is running (it takes the database's lock in write mode).
public final class Snapshot: Sendable {
    /// The database the snapshot was taken from.
    public let database: Database
    let resource: NativeResource

    init(database: Database, resource: NativeResource) {
        self.database = database
        self.resource = resource
    }

    deinit {
        database.core.releaseSnapshot(resource)
    }

    /// Releases the LevelDB snapshot now, letting LevelDB discard the old data it kept for it.
    /// Idempotent.
    public func release() {
        database.core.releaseSnapshot(resource)
    }

    /// Whether the snapshot has been released (explicitly, or by closing its database).
    public var isReleased: Bool {
        if database.core.isClosed { return true }
        return (try? database.core.withHandle { _ in resource.pointer == nil }) ?? true
    }

    var releasedError: LevelDBError {
        .closed("the snapshot has been released", path: database.path)
    }
}
