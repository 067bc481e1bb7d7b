"""The GCS object and bucket resource beyond bytes and basic metadata, through google-cloud-storage as its
users call it: holds, retention (bucket and object), moveTo, ACLs, IAM, contexts with `filter=`, compose, storage
class changes by rewrite, noncurrent-generation patches. Every check reads the answer back from a live server."""
import datetime
import time
import uuid

import pytest
from google.api_core import exceptions


def fresh(client, **kwargs):
    name = "r-" + uuid.uuid4().hex[:20]
    return client.create_bucket(name, **kwargs)


def test_holds_stop_deletes_until_released(client):
    bucket = fresh(client)
    bucket.default_event_based_hold = True
    bucket.patch()
    blob = bucket.blob("held.txt")
    blob.upload_from_string(b"keep me")
    blob.reload()
    assert blob.event_based_hold is True
    with pytest.raises(exceptions.Forbidden):
        blob.delete()
    with pytest.raises(exceptions.Forbidden):
        bucket.blob("held.txt").upload_from_string(b"replace")
    blob.event_based_hold = False
    blob.temporary_hold = True
    blob.patch()
    assert blob.temporary_hold is True and not blob.event_based_hold
    with pytest.raises(exceptions.Forbidden):
        blob.delete()
    blob.temporary_hold = False
    blob.patch()
    blob.delete()
    assert not blob.exists()
    bucket.default_event_based_hold = False
    bucket.patch()
    plain = bucket.blob("plain.txt")
    plain.upload_from_string(b"x")
    plain.reload()
    assert not plain.event_based_hold


def test_bucket_retention_policy_protects_young_objects(client):
    bucket = fresh(client)
    bucket.retention_period = 2
    bucket.patch()
    assert bucket.retention_period == 2 and bucket.retention_policy_effective_time is not None
    blob = bucket.blob("young.txt")
    blob.upload_from_string(b"data")
    blob.reload()
    assert blob.retention_expiration_time is not None
    assert blob.retention_expiration_time - blob.time_created == datetime.timedelta(seconds=2)
    with pytest.raises(exceptions.Forbidden):
        blob.delete()
    time.sleep(2.5)
    blob.delete()
    # A locked policy cannot be shortened or removed.
    bucket.reload()
    bucket.lock_retention_policy()
    assert bucket.retention_policy_locked
    bucket.retention_period = 1
    with pytest.raises(exceptions.Forbidden):
        bucket.patch()


def test_object_retention_locked_and_unlocked(client):
    bucket = client.create_bucket("r-" + uuid.uuid4().hex[:20], enable_object_retention=True)
    assert bucket.object_retention_mode == "Enabled"
    blob = bucket.blob("kept.txt")
    blob.upload_from_string(b"data")
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    blob.retention.mode = "Unlocked"
    blob.retention.retain_until_time = until
    blob.patch()
    blob.reload()
    assert blob.retention.mode == "Unlocked"
    with pytest.raises(exceptions.Forbidden):
        blob.delete()
    blob.retention.mode = None
    blob.retention.retain_until_time = None
    with pytest.raises(exceptions.Forbidden):
        blob.patch()
    blob.reload()
    blob.retention.mode = None
    blob.retention.retain_until_time = None
    blob.patch(override_unlocked_retention=True)
    assert blob.retention.mode is None
    blob.delete()
    # Object retention needs a bucket that enables it.
    other = fresh(client).blob("x")
    other.upload_from_string(b"x")
    other.retention.mode = "Unlocked"
    other.retention.retain_until_time = until
    with pytest.raises(exceptions.BadRequest):
        other.patch()


def test_move_blob_is_a_rename_with_source_preconditions(client):
    bucket = fresh(client)
    source = bucket.blob("source")
    source.upload_from_string(b"moving bytes", content_type="text/plain")
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.move_blob(source, "dest/dest_file.txt", if_source_generation_match=source.generation + 1)
    moved = bucket.move_blob(
        source, "dest/dest_file.txt", if_source_generation_match=source.generation, if_source_metageneration_match=1
    )
    assert moved.name == "dest/dest_file.txt"
    assert moved.download_as_bytes() == b"moving bytes"
    assert moved.content_type == "text/plain"
    assert not bucket.blob("source").exists()
    # The destination's own preconditions: "must not exist" fails now that it does.
    again = bucket.blob("again")
    again.upload_from_string(b"2")
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.move_blob(again, "dest/dest_file.txt", if_generation_match=0)
    assert bucket.blob("again").exists()


def test_bucket_and_object_acls(client):
    bucket = fresh(client)
    bucket.acl.reload()
    assert "OWNER" in bucket.acl.entity("project", "owners-000000000000").get_roles()
    bucket.acl.group("devs@example.com").grant_read()
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.acl.save(if_metageneration_match=99)
    bucket.reload()
    bucket.acl.save(if_metageneration_match=bucket.metageneration)
    bucket.acl.reload()
    assert "READER" in bucket.acl.group("devs@example.com").get_roles()
    bucket.default_object_acl.reload()
    bucket.default_object_acl.user("owner@example.com").grant_owner()
    bucket.default_object_acl.save()
    blob = bucket.blob("with-acl")
    blob.upload_from_string(b"x")
    blob.acl.reload()
    assert "OWNER" in blob.acl.user("owner@example.com").get_roles(), "a new object takes the bucket's default"
    blob.acl.all().grant_read()
    blob.acl.save()
    blob.acl.reload()
    assert "READER" in blob.acl.all().get_roles()
    private = bucket.blob("private")
    private.upload_from_string(b"x", predefined_acl="private")
    private.acl.reload()
    assert "READER" not in private.acl.all().get_roles()
    # Uniform bucket-level access turns the legacy ACL calls off; turning it off again brings the same ACLs back.
    before = sorted((e["entity"], e["role"]) for e in bucket.acl)
    bucket.iam_configuration.uniform_bucket_level_access_enabled = True
    bucket.patch()
    with pytest.raises(exceptions.BadRequest):
        bucket.acl.reload()
    with pytest.raises(exceptions.BadRequest):
        blob.acl.reload()
    bucket.iam_configuration.uniform_bucket_level_access_enabled = False
    bucket.patch()
    bucket.acl.reload()
    assert sorted((e["entity"], e["role"]) for e in bucket.acl) == before


def test_iam_policy_round_trip_and_conditions(client):
    bucket = fresh(client)
    policy = bucket.get_iam_policy(requested_policy_version=3)
    assert policy.version == 1 and policy.bindings
    policy.bindings.append({"role": "roles/storage.objectViewer", "members": {"allUsers"}})
    saved = bucket.set_iam_policy(policy)
    assert {"allUsers"} in [b["members"] for b in saved.bindings if b["role"] == "roles/storage.objectViewer"]
    conditional = bucket.get_iam_policy(requested_policy_version=3)
    conditional.bindings.append(
        {"role": "roles/storage.objectViewer", "members": {"user:a@example.com"}, "condition": {"title": "t", "expression": "true"}}
    )
    with pytest.raises(exceptions.PreconditionFailed, match="uniform bucket-level access"):
        bucket.set_iam_policy(conditional)
    bucket.iam_configuration.uniform_bucket_level_access_enabled = True
    bucket.patch()
    with pytest.raises(exceptions.BadRequest, match="at least 3"):
        bucket.set_iam_policy(conditional)
    conditional.version = 3
    assert bucket.set_iam_policy(conditional).version == 3
    assert bucket.get_iam_policy(requested_policy_version=3).bindings == conditional.bindings
    assert bucket.test_iam_permissions(["storage.buckets.get", "storage.objects.list"]) == [
        "storage.buckets.get", "storage.objects.list"]


def test_contexts_merge_and_filter(client):
    from google.cloud.storage.blob import ObjectContexts, ObjectCustomContextPayload
    bucket = fresh(client)
    for name, value in [("a", "match"), ("b", "other"), ("c", None)]:
        blob = bucket.blob(name)
        if value:
            blob.contexts = ObjectContexts(blob, custom={"target": ObjectCustomContextPayload(value=value)})
        blob.upload_from_string(b"x")
    assert [b.name for b in bucket.list_blobs(filter_='contexts."target"="match"')] == ["a"]
    assert [b.name for b in bucket.list_blobs(filter_='contexts."target":*')] == ["a", "b"]
    assert [b.name for b in bucket.list_blobs(filter_='-contexts."target"="match"')] == ["b", "c"]
    assert [b.name for b in bucket.list_blobs(filter_='-contexts."target":*')] == ["c"]
    with pytest.raises(exceptions.BadRequest):
        list(bucket.list_blobs(filter_="size > 3"))
    blob = bucket.get_blob("a")
    created = blob.contexts.custom["target"].create_time
    blob.contexts.custom = {"extra": ObjectCustomContextPayload(value="1")}
    blob.patch()
    blob.reload()
    # A patch merges: keys it does not name stay, with their creation time.
    assert blob.contexts.custom["target"].value == "match" and blob.contexts.custom["extra"].value == "1"
    assert blob.contexts.custom["target"].create_time == created
    blob.contexts.custom["target"].value = None
    blob.patch()
    blob.reload()
    assert "target" not in blob.contexts.custom
    blob.contexts = None
    blob.patch()
    blob.reload()
    assert not blob.contexts or not blob.contexts.custom


def test_compose_without_content_type_and_deleting_sources(client):
    bucket = fresh(client)
    parts = []
    for i in range(3):
        part = bucket.blob(f"part-{i}")
        part.upload_from_string(f"{i}".encode(), content_type="text/plain")
        parts.append(part)
    whole = bucket.blob("whole")
    whole.compose(parts)
    whole.reload()
    assert whole.content_type is None and whole.download_as_bytes() == b"012"
    again = bucket.blob("again")
    again.compose(parts, delete_source_objects=True)
    assert again.download_as_bytes() == b"012"
    assert not any(p.exists() for p in parts)


def test_rewrite_changes_storage_class(client):
    bucket = fresh(client, location="US")
    blob = bucket.blob("classy")
    blob.upload_from_string(b"x" * 1000)
    assert blob.storage_class == "STANDARD"
    blob.update_storage_class("NEARLINE")
    blob.reload()
    assert blob.storage_class == "NEARLINE"
    blob.update_storage_class("COLDLINE")
    assert bucket.get_blob("classy").storage_class == "COLDLINE"
    archive = client.create_bucket(bucket.name + "-a", location="US")
    archive.storage_class = "ARCHIVE"
    archive.patch()
    assert client.get_bucket(archive.name).storage_class == "ARCHIVE"


def test_noncurrent_generation_metadata_can_change(client):
    bucket = fresh(client)
    bucket.versioning_enabled = True
    bucket.patch()
    blob = bucket.blob("v")
    blob.upload_from_string(b"one")
    first = blob.generation
    blob.upload_from_string(b"two")
    old = bucket.blob("v", generation=first)
    old.content_language = "en"
    old.patch(if_generation_match=first)
    assert old.content_language == "en" and old.metageneration == 2
    assert bucket.get_blob("v").content_language is None


def test_soft_delete_keeps_deleted_objects_restorable(client):
    bucket = fresh(client)
    assert bucket.soft_delete_policy.retention_duration_seconds == 604800, "GCS's default for a new bucket"
    blob = bucket.blob("gone.txt")
    blob.upload_from_string(b"restore me", content_type="text/plain")
    generation = blob.generation
    blob.delete()
    assert list(bucket.list_blobs()) == []
    deleted = list(bucket.list_blobs(soft_deleted=True))
    assert [(b.name, b.generation) for b in deleted] == [("gone.txt", generation)]
    assert deleted[0].soft_delete_time is not None and deleted[0].hard_delete_time > deleted[0].soft_delete_time
    found = bucket.get_blob("gone.txt", generation=generation, soft_deleted=True)
    assert found.soft_delete_time is not None
    restored = bucket.restore_blob("gone.txt", generation=generation)
    assert restored.generation != generation
    assert bucket.blob("gone.txt").download_as_bytes() == b"restore me"
    assert list(bucket.list_blobs(soft_deleted=True)) == []
    # A bucket without soft delete deletes for good.
    bucket.soft_delete_policy.retention_duration_seconds = 0
    bucket.patch()
    bucket.blob("gone.txt").delete()
    assert list(bucket.list_blobs(soft_deleted=True)) == []


def test_managed_folders_as_prefixes(client):
    bucket = fresh(client)
    for name in ["parent/child.txt", "top.txt"]:
        bucket.blob(name).upload_from_string(b"x")
    client._post_resource(f"/b/{bucket.name}/managedFolders", {"name": "managed1"})
    with pytest.raises(exceptions.Conflict):
        client._post_resource(f"/b/{bucket.name}/managedFolders", {"name": "managed1"})
    assert client._get_resource(f"/b/{bucket.name}/managedFolders/managed1")["name"] == "managed1/"
    listing = bucket.list_blobs(delimiter="/")
    list(listing)
    assert listing.prefixes == {"parent/"}
    listing = bucket.list_blobs(delimiter="/", include_folders_as_prefixes=True)
    list(listing)
    assert listing.prefixes == {"parent/", "managed1/"}
    client._delete_resource(f"/b/{bucket.name}/managedFolders/managed1")
    with pytest.raises(exceptions.NotFound):
        client._get_resource(f"/b/{bucket.name}/managedFolders/managed1")


def test_soft_deleted_bucket_is_restored_with_its_generation(client):
    bucket = fresh(client)
    name, generation = bucket.name, bucket.generation
    bucket.delete()
    with pytest.raises(exceptions.NotFound):
        client.get_bucket(name)
    deleted = client.get_bucket(name, generation=generation, soft_deleted=True)
    assert deleted.generation == generation and deleted.soft_delete_time and deleted.hard_delete_time
    assert name in [b.name for b in client.list_buckets(soft_deleted=True)]
    restored = client.restore_bucket(name, generation=generation)
    assert restored.generation == generation and restored.soft_delete_time is None
    assert client.get_bucket(name).generation == generation


def test_bucket_predefined_acls(client):
    bucket = client.create_bucket(
        "r-" + uuid.uuid4().hex[:20], predefined_acl="publicRead", predefined_default_object_acl="publicRead")
    bucket.acl.reload()
    assert "READER" in bucket.acl.all().get_roles()
    blob = bucket.blob("public-by-default")
    blob.upload_from_string(b"x")
    blob.acl.reload()
    assert "READER" in blob.acl.all().get_roles()
    bucket.iam_configuration.public_access_prevention = "enforced"
    bucket.patch()
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.make_public()


def test_soft_delete_keeps_overwritten_versions(client):
    bucket = fresh(client)
    blob = bucket.blob("over.txt")
    blob.upload_from_string(b"first")
    first = blob.generation
    blob.upload_from_string(b"second")
    kept = list(bucket.list_blobs(soft_deleted=True))
    assert [(b.name, b.generation) for b in kept] == [("over.txt", first)]
    bucket.restore_blob("over.txt", generation=first)
    assert bucket.blob("over.txt").download_as_bytes() == b"first"
