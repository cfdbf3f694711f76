use super::*;

#[test]
fn keys_follow_the_shape() {
    for good in ["default", "hr", "a", "0-eng", &"a".repeat(63)] {
        assert!(SpaceKey::parse(good).is_ok(), "{good}");
    }
    for bad in ["", "-hr", "HR", "h_r", "hr ", "é", &"a".repeat(64)] {
        assert_eq!(SpaceKey::parse(bad).unwrap_err().field, "space", "{bad}");
    }
}

#[test]
fn roles_parse_by_name_and_a_membership_needs_one() {
    let roles = SpaceRoles::parse(&["reviewer", "author"]).unwrap();
    assert_eq!(roles.names(), ["author", "reviewer"]);
    assert!(SpaceRoles::parse(&["owner"]).is_err());
    assert!(SpaceRoles::parse_membership::<&str>(&[]).is_err());
    let many = ["author"; SpaceRoles::MAX_NAMES];
    assert_eq!(
        SpaceRoles::parse_membership(&many).unwrap().names(),
        ["author"]
    );
    let too_many = ["author"; SpaceRoles::MAX_NAMES + 1];
    assert_eq!(
        SpaceRoles::parse_membership(&too_many).unwrap_err().field,
        "roles"
    );
    assert!(
        SpaceRoles::parse(&["admin"]).is_err(),
        "admin is the token's, not a space role"
    );
}

#[test]
fn subjects_are_users_or_groups() {
    assert_eq!(
        Subject::parse("user:alice").unwrap(),
        Subject::User("alice".into())
    );
    assert_eq!(
        Subject::parse("group:eng:leads").unwrap(),
        Subject::Group("eng:leads".into())
    );
    for bad in ["alice", "user:", "team:x", "group:\u{7}"] {
        assert!(Subject::parse(bad).is_err(), "{bad}");
    }
    let long = |n: usize| format!("group:{}", "é".repeat(n));
    assert!(Subject::parse(&long(256)).is_ok(), "256 characters");
    assert!(Subject::parse(&long(257)).is_err(), "257 characters");
    assert_eq!(Subject::Group("eng".into()).to_string(), "group:eng");
}

#[test]
fn token_roles_count_in_default_only() {
    let token = TokenRoles {
        author: true,
        reviewer: false,
        admin: false,
    };
    let access = Access::new(
        token,
        [("hr".to_string(), SpaceRoles::of([SpaceRole::Reviewer]))],
    );
    assert!(access.has(DEFAULT_SPACE, SpaceRole::Author));
    assert!(!access.has(DEFAULT_SPACE, SpaceRole::Reviewer));
    assert!(access.has("hr", SpaceRole::Reviewer));
    assert!(!access.has("hr", SpaceRole::Author));
    assert!(access.roles_in("legal").is_empty());
    assert_eq!(
        access.spaces_with(SpaceRole::Reviewer),
        Some(vec!["hr".to_string()])
    );
}

#[test]
fn memberships_of_user_and_groups_add_up() {
    let access = Access::new(
        TokenRoles::default(),
        [
            ("hr".to_string(), SpaceRoles::of([SpaceRole::Author])),
            ("hr".to_string(), SpaceRoles::of([SpaceRole::Reviewer])),
        ],
    );
    assert_eq!(access.roles_in("hr").names(), ["author", "reviewer"]);
    assert!(access.is_anyone());
    assert!(!Access::new(TokenRoles::default(), []).is_anyone());
}

#[test]
fn the_platform_admin_has_every_role_everywhere() {
    let access = Access::new(
        TokenRoles {
            admin: true,
            ..Default::default()
        },
        [],
    );
    assert_eq!(access.roles_in("anything"), SpaceRoles::ALL);
    assert_eq!(access.spaces_with(SpaceRole::Reviewer), None);
    assert!(access.is_anyone());
}

#[test]
fn memberships_joined_later_give_what_reading_them_first_gives() {
    let token = TokenRoles {
        reviewer: true,
        ..Default::default()
    };
    let memberships = || {
        [
            ("hr".to_string(), SpaceRoles::of([SpaceRole::Author])),
            ("hr".to_string(), SpaceRoles::of([SpaceRole::Reviewer])),
            (
                "default".to_string(),
                SpaceRoles::of([SpaceRole::SpaceAdmin]),
            ),
            ("ops".to_string(), SpaceRoles::NONE),
        ]
    };
    let unread = Access::memberships_unread(token);
    assert!(unread.is_unread());
    assert_eq!(unread.roles_in("hr"), SpaceRoles::NONE);
    let joined = unread.joined(memberships());
    assert!(!joined.is_unread());
    assert_eq!(joined, Access::new(token, memberships()));
    assert_eq!(
        joined.roles_in("default").names(),
        ["reviewer", "space_admin"]
    );
    assert_eq!(
        joined.spaces_with(SpaceRole::Reviewer).unwrap(),
        ["default", "hr"]
    );

    // The platform admin's access is whole from its token.
    let admin = TokenRoles {
        admin: true,
        ..Default::default()
    };
    assert!(!Access::memberships_unread(admin).is_unread());
}
