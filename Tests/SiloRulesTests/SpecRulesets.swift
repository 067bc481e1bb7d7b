/// The reference rulesets the engine's decisions are checked against, verbatim.
enum SpecRules {
    static let r1Body = """
        service firebase.storage {
          match /b/{bucket}/o {
            match /{allPaths=**} {
              allow read, write: if request.auth != null;
            }
          }
        }
        """
    static let r1 = "rules_version = '2';\n" + r1Body
    static let r2 = r1Body

    static let r3Body = """
        service firebase.storage {
          match /b/{bucket}/o {
            match /images/{all=**} { allow read; }
          }
        }
        """
    static let r3a = r3Body
    static let r3b = "rules_version = '2';\n" + r3Body

    static let r4 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{userId}/{fileName} {
              allow read;
              allow write: if request.auth != null && request.auth.uid == userId;
            }
          }
        }
        """

    static let r5 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /images/{imageId} {
              allow read;
              allow write: if request.resource.size < 5 * 1024 * 1024
                           && request.resource.contentType.matches('image/.*')
                           && request.resource.contentType == resource.contentType
                           && imageId.size() < 32
            }
          }
        }
        """

    static let r6 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /images/{imageId} {
              allow write: if request.resource.size < 5 * 1024 * 1024
                           && request.resource.contentType.matches('image/.*');
            }
          }
        }
        """

    static let r7 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /files/{id} {
              allow create: if true;
              allow update: if false;
              allow read: if true;
              allow delete: if resource.contentType != 'text/plain';
            }
            match /upload/{f} {
              allow create: if resource == null;
            }
            match /disallowSize0 {
              allow create: if request.resource.size != 0;
            }
          }
        }
        """

    static let r8 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /files/{groupId}/{fileName} {
              allow read: if resource.metadata.owner == request.auth.token.groupId;
              allow write: if request.auth.token.groupId == groupId
                           && request.resource.metadata.owner == groupId;
            }
          }
        }
        """

    static let r9 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /photos/{uid}/{name} {
              allow update: if request.auth.uid == uid
                && request.resource.metadata.diff(resource.metadata).affectedKeys().hasOnly(['caption']);
            }
          }
        }
        """

    static let r10 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            function signedIn() { return request.auth != null; }
            function isOwner(uid) { return signedIn() && request.auth.uid == uid; }
            function smallImage(maxMb) {
              let limit = maxMb * 1024 * 1024;
              let isImage = request.resource.contentType.matches('image/.*');
              return isImage && request.resource.size < limit;
            }
            match /avatars/{uid}/{file} {
              function inOwnFolder() { return isOwner(uid); }
              allow read: if signedIn();
              allow create, update: if inOwnFolder() && smallImage(2);
              allow delete: if inOwnFolder();
            }
          }
        }
        """

    static let r11 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            function signedInOrPublic() {
              return request.auth.uid != null || resource.metadata.visibility == 'public';
            }
            match /images/{imageId} {
              allow read: if signedInOrPublic();
            }
          }
        }
        """

    static let r12 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /neg/{f}     { allow read: if !(request.auth.uid == 'banned'); }
            match /div/{f}     { allow read: if resource.size / 0 == 1 || true; }
            match /div2/{f}    { allow read: if resource.size / 0 > 0; }
            match /conv/{f}    { allow read: if int(f) > 10; }
            match /type/{f}    { allow read: if resource.size > '10'; }
            match /nonbool/{f} { allow read: if resource.size; }
            match /dflt/{f}    { allow read: if resource.metadata.get('tier', 'free') == 'free'; }
            match /in/{f}      { allow read: if !('secret' in resource.metadata); }
            match /tern/{f}    { allow read: if request.auth == null ? resource.metadata.public == 'true' : true; }
            match /nullres/{f} { allow read: if resource.size < 100; }
          }
        }
        """

    static let r13 = #"""
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /docs/{file} { allow read: if false; }
            match /{path=**}   { allow read: if request.auth.token.admin == true; }
            match /docs/{name} { allow read: if name.matches('.*\\.pub\\.pdf'); }
          }
        }
        """#

    static let r14 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /{allPaths=**} {
              allow read: if request.path[0] == 'b' && request.path[2] == 'o'
                          && request.path[3] == 'dir'
                          && request.path == path('/b/' + bucket + '/o/dir/image.png');
            }
          }
        }
        """

    static let r20 = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/files/{fileId} {
              allow read, write: if request.auth.uid == uid
                  && firestore.exists(/databases/(default)/documents/users/$(uid));
              allow read: if request.auth.uid in
                  firestore.get(/databases/(default)/documents/users/$(uid)).data.friends;
            }
          }
        }
        """
}
