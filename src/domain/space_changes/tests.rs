use super::*;

#[test]
fn the_last_space_admin_goes_only_by_the_platform_admin() {
    let admin = Some(SpaceRoles::of([SpaceRole::SpaceAdmin]));
    let reviewer = Some(SpaceRoles::of([SpaceRole::Reviewer]));
    let both = Some(SpaceRoles::of([SpaceRole::SpaceAdmin, SpaceRole::Reviewer]));
    let last = Err(SpaceRefusal::LastSpaceAdmin);
    assert_eq!(check_last_admin(admin, None, 0, false), last);
    assert_eq!(check_last_admin(admin, reviewer, 0, false), last);
    assert_eq!(check_last_admin(admin, None, 0, true), Ok(()));
    assert_eq!(check_last_admin(admin, None, 1, false), Ok(()));
    assert_eq!(check_last_admin(admin, both, 0, false), Ok(()));
    assert_eq!(check_last_admin(reviewer, None, 0, false), Ok(()));
    assert_eq!(check_last_admin(None, reviewer, 0, false), Ok(()));
}

#[test]
fn a_name_is_printable_and_not_blank() {
    assert_eq!(
        SpaceName::parse(" Human resources ").unwrap().as_str(),
        "Human resources"
    );
    for bad in ["", "   ", "a\nb", &"x".repeat(201)] {
        assert!(SpaceName::parse(bad).is_err(), "{bad:?}");
    }
    assert!(SpaceName::parse(&"é".repeat(200)).is_ok());
}
