internal import DocModel

/// Where ``FileBlobStore`` keeps what, under its root directory:
///
/// ```
/// <root>/<tenant>/<id[0..2]>/<id>          the bytes of a complete attachment
/// <root>/<tenant>/<id[0..2]>/<id>.json     its metadata (written last: the commit point)
/// <root>/<tenant>/partial/<id>             the bytes of an upload in progress
/// <root>/<tenant>/partial/<id>.json        its declaration and start time
/// <root>/<tenant>/partial/<id>.lock        the upload lock's file, while it is held
/// ```
///
/// `<tenant>` is the tenant name escaped into one safe file name (``directoryName(of:)``), so
/// no tenant name reaches outside its directory or collides with another on a
/// case-insensitive filesystem. Ids are 64 lowercase hex characters, so `partial` is never a
/// shard name.
struct FileBlobLayout: Sendable {
    let root: String

    static let partialDirectory = "partial"
    static let metadataSuffix = ".json"
    static let temporarySuffix = ".tmp"
    static let lockSuffix = ".lock"

    /// The tenant's directory name: `a-z`, `0-9`, `-` and `_` stay, every other byte (also
    /// upper case letters, `.` and `%`) becomes `%XX`. A name that would be longer than
    /// 200 bytes is `~` + the SHA-256 of the tenant name (`~` never appears otherwise).
    static func directoryName(of tenant: TenantID) -> String {
        let hexDigits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in tenant.rawValue.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
        if out.count > 200 {
            return "~" + BlobDigest.id(of: Array(tenant.rawValue.utf8)).hex
        }
        return String(decoding: out, as: UTF8.self)
    }

    func tenantDirectory(_ tenant: TenantID) -> String {
        root + "/" + Self.directoryName(of: tenant)
    }

    func shardDirectory(_ id: AttachmentID, tenant: TenantID) -> String {
        tenantDirectory(tenant) + "/" + String(id.hex.prefix(2))
    }

    func blobPath(_ id: AttachmentID, tenant: TenantID) -> String {
        shardDirectory(id, tenant: tenant) + "/" + id.hex
    }

    func metadataPath(_ id: AttachmentID, tenant: TenantID) -> String {
        blobPath(id, tenant: tenant) + Self.metadataSuffix
    }

    func partialDirectory(_ tenant: TenantID) -> String {
        tenantDirectory(tenant) + "/" + Self.partialDirectory
    }

    func partialPath(_ id: AttachmentID, tenant: TenantID) -> String {
        partialDirectory(tenant) + "/" + id.hex
    }

    func partialDeclarationPath(_ id: AttachmentID, tenant: TenantID) -> String {
        partialPath(id, tenant: tenant) + Self.metadataSuffix
    }

    func partialLockPath(_ id: AttachmentID, tenant: TenantID) -> String {
        partialPath(id, tenant: tenant) + Self.lockSuffix
    }
}
